// A parameter used twice: a square weight applied in two successive layers
// (and so on both sides of a nonlinearity) gets the sum of both layers'
// gradients.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}w:
// CHECK-NEXT: gradient check: PASS
func.func @parameter_used_twice_step(
    %x: tensor<3x4xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %t: tensor<3x4xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %w: tensor<4x4xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.7)>}) -> tensor<f32> {
  %h1 = zt.matmul %x, %w : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %a1 = zt.sigmoid %h1 : tensor<3x4xf32>
  %y = zt.matmul %a1, %w : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %l = zt.mse %y, %t : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
