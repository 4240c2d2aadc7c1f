// mean over one middle dimension, over two with keep_dims, and over all of a
// rank-2 value: each gradient is the incoming one scaled by 1/count and
// broadcast back over the reduced dimensions.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}v:
// CHECK-NEXT: ok{{ +}}w:
// CHECK-NEXT: gradient check: PASS
func.func @mean_step(
    %x: tensor<2x3x4xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %t1: tensor<2x4xf32> {zt.name = "target1", zt.role = #zt.role<label>},
    %t2: tensor<1x3x1xf32> {zt.name = "target2", zt.role = #zt.role<label>},
    %w: tensor<2x3x4xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %v: tensor<3x5xf32> {zt.name = "v", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %h = zt.mul %w, %x : tensor<2x3x4xf32>
  %s1 = zt.mean %h, dims = [1] : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %l1 = zt.mse %s1, %t1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  %s2 = zt.mean %h, dims = [0, 2] {keep_dims} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %l2 = zt.mse %s2, %t2 : (tensor<1x3x1xf32>, tensor<1x3x1xf32>) -> tensor<f32>
  %vt = zt.tanh %v : tensor<3x5xf32>
  %l3 = zt.mean %vt, dims = [0, 1] : (tensor<3x5xf32>) -> tensor<f32>
  %l12 = zt.add %l1, %l2 : tensor<f32>
  %l = zt.add %l12, %l3 : tensor<f32>
  return %l : tensor<f32>
}
