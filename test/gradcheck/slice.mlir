// Strided slices that overlap and leave gaps: each gradient is scattered with
// the fused slice_grad rule and the scattered parts are summed; elements no
// slice reads get zero.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zt-opt %s -zt-autodiff | FileCheck %s --check-prefix=IR
// RUN: zcc-gradcheck %t.zplan --samples 64 | FileCheck %s
// IR: zt.slice_grad
// CHECK: ok{{ +}}w:
// CHECK-NEXT: gradient check: PASS
func.func @slice_step(
    %t1: tensor<4x3xf32> {zt.name = "target1", zt.role = #zt.role<label>},
    %x2: tensor<2x3xf32> {zt.name = "x2", zt.role = #zt.role<input>},
    %w: tensor<5x8xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %s1 = zt.slice %w [0:4, 2:8:2] : (tensor<5x8xf32>) -> tensor<4x3xf32>
  %s2 = zt.slice %w [1:5:2, 0:7:3] : (tensor<5x8xf32>) -> tensor<2x3xf32>
  %l1 = zt.mse %s1, %t1 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  %p2 = zt.mul %s2, %x2 : tensor<2x3xf32>
  %q2 = zt.mul %p2, %s2 : tensor<2x3xf32>
  %l2 = zt.sum %q2, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  %l = zt.add %l1, %l2 : tensor<f32>
  return %l : tensor<f32>
}
