// softmax along the last axis and along a middle one (axis = 1 of a rank-3
// value): the fused softmax_grad rule, which reads the result, per axis.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}v:
// CHECK-NEXT: ok{{ +}}w:
// CHECK-NEXT: gradient check: PASS
func.func @softmax_step(
    %t1: tensor<3x5xf32> {zt.name = "target1", zt.role = #zt.role<label>},
    %t2: tensor<2x4x3xf32> {zt.name = "target2", zt.role = #zt.role<label>},
    %w: tensor<3x5xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.5)>},
    %v: tensor<2x4x3xf32> {zt.name = "v", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.5)>}) -> tensor<f32> {
  %s1 = zt.softmax %w, axis = -1 : tensor<3x5xf32>
  %l1 = zt.mse %s1, %t1 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<f32>
  %s2 = zt.softmax %v, axis = 1 : tensor<2x4x3xf32>
  %l2 = zt.mse %s2, %t2 : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<f32>
  %l = zt.add %l1, %l2 : tensor<f32>
  return %l : tensor<f32>
}
