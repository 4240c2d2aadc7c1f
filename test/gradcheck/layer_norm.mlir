// layer_norm with the normalised value, gamma and beta all parameters: the
// fused layer_norm_grad rule gives all three gradients, recomputing the row
// statistics from the saved operand.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}x:
// CHECK-NEXT: ok{{ +}}gamma:
// CHECK-NEXT: ok{{ +}}beta:
// CHECK-NEXT: gradient check: PASS
func.func @layer_norm_step(
    %t: tensor<4x6xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %x: tensor<4x6xf32> {zt.name = "x", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.5, std = 2.0)>},
    %g: tensor<6xf32> {zt.name = "gamma", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 1.0, std = 0.5)>},
    %b: tensor<6xf32> {zt.name = "beta", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.5)>}) -> tensor<f32> {
  %y = zt.layer_norm %x, %g, %b, eps = 1.0e-5 : (tensor<4x6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %l = zt.mse %y, %t : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
