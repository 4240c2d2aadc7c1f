// transpose with a permutation that is not its own inverse ([2, 0, 1]) and a
// batched matrix transpose ([0, 2, 1]): each gradient goes through the inverse
// permutation.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}v:
// CHECK-NEXT: ok{{ +}}w:
// CHECK-NEXT: gradient check: PASS
func.func @transpose_step(
    %x: tensor<4x2x3xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %t: tensor<4x2x3xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %w: tensor<2x3x4xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %v: tensor<4x3x2xf32> {zt.name = "v", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %wt = zt.transpose %w, perm = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %vt = zt.transpose %v, perm = [0, 2, 1] : (tensor<4x3x2xf32>) -> tensor<4x2x3xf32>
  %h = zt.mul %wt, %x : tensor<4x2x3xf32>
  %y = zt.add %h, %vt : tensor<4x2x3xf32>
  %l = zt.mse %y, %t : (tensor<4x2x3xf32>, tensor<4x2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
