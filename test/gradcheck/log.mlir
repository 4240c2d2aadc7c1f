// log of positive parameters: the gradient divided by the operand.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}w:
// CHECK-NEXT: gradient check: PASS
func.func @log_step(
    %x: tensor<4x6xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %t: tensor<4x6xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %w: tensor<4x6xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<uniform(low = 0.5, high = 2.0)>}) -> tensor<f32> {
  %a = zt.log %w : tensor<4x6xf32>
  %y = zt.mul %a, %x : tensor<4x6xf32>
  %l = zt.mse %y, %t : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
