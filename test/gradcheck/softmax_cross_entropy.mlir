// softmax_cross_entropy on rank-3 logits (a linear layer with a bias on
// [batch, seq, features]) with integer labels: the fused
// softmax_cross_entropy_grad rule, which divides by the number of rows.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}b:
// CHECK-NEXT: ok{{ +}}w:
// CHECK-NEXT: gradient check: PASS
func.func @softmax_cross_entropy_step(
    %x: tensor<2x3x4xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %labels: tensor<2x3xi32> {zt.name = "labels", zt.role = #zt.role<label>},
    %w: tensor<4x5xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %b: tensor<5xf32> {zt.name = "b", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %h = zt.matmul %x, %w : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %bb = zt.broadcast_in_dim %b, dims = [2] : (tensor<5xf32>) -> tensor<2x3x5xf32>
  %logits = zt.add %h, %bb : tensor<2x3x5xf32>
  %l = zt.softmax_cross_entropy %logits, %labels : (tensor<2x3x5xf32>, tensor<2x3xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
