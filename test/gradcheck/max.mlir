// max over the last dimension, and over the two leading ones with keep_dims,
// of distinct random values: the fused max_grad rule sends each row's gradient
// to its maximal element only.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 64 | FileCheck %s
// CHECK: ok{{ +}}w:
// CHECK-NEXT: gradient check: PASS
func.func @max_step(
    %t1: tensor<3x4xf32> {zt.name = "target1", zt.role = #zt.role<label>},
    %t2: tensor<1x1x5xf32> {zt.name = "target2", zt.role = #zt.role<label>},
    %w: tensor<3x4x5xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %m1 = zt.max %w, dims = [2] : (tensor<3x4x5xf32>) -> tensor<3x4xf32>
  %l1 = zt.mse %m1, %t1 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<f32>
  %m2 = zt.max %w, dims = [0, 1] {keep_dims} : (tensor<3x4x5xf32>) -> tensor<1x1x5xf32>
  %l2 = zt.mse %m2, %t2 : (tensor<1x1x5xf32>, tensor<1x1x5xf32>) -> tensor<f32>
  %l = zt.add %l1, %l2 : tensor<f32>
  return %l : tensor<f32>
}
