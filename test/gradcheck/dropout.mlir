// dropout (rate 0.5, so about half the elements are dropped): the backward is
// the same mask recomputed from (seed, step); the checker holds the step
// fixed, so the finite differences see the same mask.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 64 | FileCheck %s
// CHECK: ok{{ +}}w:
// CHECK-NEXT: gradient check: PASS
func.func @dropout_step(
    %step: tensor<i64> {zt.name = "step", zt.role = #zt.role<step>},
    %x: tensor<4x8xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %t: tensor<4x8xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %w: tensor<4x8xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %h = zt.mul %w, %x : tensor<4x8xf32>
  %d = zt.dropout %h, %step, rate = 0.5, seed = 7 : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  %l = zt.mse %d, %t : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
