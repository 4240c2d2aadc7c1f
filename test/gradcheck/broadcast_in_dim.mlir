// broadcast_in_dim: a new leading dimension, a repeated size-1 dimension, a
// vector onto the last dimension and a scalar onto everything; each gradient is
// a sum over the broadcast dimensions (then a reshape back).
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}scalar:
// CHECK-NEXT: ok{{ +}}row:
// CHECK-NEXT: ok{{ +}}col:
// CHECK-NEXT: gradient check: PASS
func.func @broadcast_in_dim_step(
    %x: tensor<2x3x4xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %t: tensor<2x3x4xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %col: tensor<3x1xf32> {zt.name = "col", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %row: tensor<4xf32> {zt.name = "row", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %scalar: tensor<f32> {zt.name = "scalar", zt.role = #zt.role<parameter>, zt.init = #zt.init<uniform(low = 0.5, high = 1.5)>}) -> tensor<f32> {
  %cb = zt.broadcast_in_dim %col, dims = [1, 2] : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %rb = zt.broadcast_in_dim %row, dims = [2] : (tensor<4xf32>) -> tensor<2x3x4xf32>
  %sb = zt.broadcast_in_dim %scalar, dims = [] : (tensor<f32>) -> tensor<2x3x4xf32>
  %cx = zt.mul %cb, %x : tensor<2x3x4xf32>
  %h = zt.add %cx, %rb : tensor<2x3x4xf32>
  %y = zt.mul %h, %sb : tensor<2x3x4xf32>
  %l = zt.mse %y, %t : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
