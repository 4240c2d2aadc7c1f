// reshape (a row-major reinterpretation, rank up and down): the gradient is
// reshaped back, so each element's gradient lands on the element it came from.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}w:
// CHECK-NEXT: gradient check: PASS
func.func @reshape_step(
    %x: tensor<2x3x4xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %t: tensor<3x8xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %w: tensor<6x4xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %r = zt.reshape %w : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
  %h = zt.mul %r, %x : tensor<2x3x4xf32>
  %y = zt.reshape %h : (tensor<2x3x4xf32>) -> tensor<3x8xf32>
  %l = zt.mse %y, %t : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
