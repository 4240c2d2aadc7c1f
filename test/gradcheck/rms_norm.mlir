// rms_norm of a rank-3 parameter with gamma a parameter: the fused
// rms_norm_grad rule gives both gradients from the saved operand.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}x:
// CHECK-NEXT: ok{{ +}}gamma:
// CHECK-NEXT: gradient check: PASS
func.func @rms_norm_step(
    %t: tensor<2x3x5xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %x: tensor<2x3x5xf32> {zt.name = "x", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.5, std = 2.0)>},
    %g: tensor<5xf32> {zt.name = "gamma", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 1.0, std = 0.5)>}) -> tensor<f32> {
  %y = zt.rms_norm %x, %g, eps = 1.0e-6 : (tensor<2x3x5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  %l = zt.mse %y, %t : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
