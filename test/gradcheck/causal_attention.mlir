// constant and causal_mask inside single-head causal attention: scores
// q k^T scaled by a constant, masked, softmaxed and applied to v; the
// constant and the mask get no gradient, q, k and v do (through softmax_grad
// and the masked entries, whose probabilities are exactly 0).
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}v:
// CHECK-NEXT: ok{{ +}}q:
// CHECK-NEXT: ok{{ +}}k:
// CHECK-NEXT: gradient check: PASS
func.func @causal_attention_step(
    %t: tensor<4x3xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %q: tensor<4x3xf32> {zt.name = "q", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %k: tensor<4x3xf32> {zt.name = "k", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %v: tensor<4x3xf32> {zt.name = "v", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %s = zt.matmul %q, %k {transpose_rhs} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x4xf32>
  %c = zt.constant dense<0.577350259> : tensor<f32>
  %cb = zt.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
  %scaled = zt.mul %s, %cb : tensor<4x4xf32>
  %m = zt.causal_mask : tensor<4x4xf32>
  %masked = zt.add %scaled, %m : tensor<4x4xf32>
  %p = zt.softmax %masked, axis = -1 : tensor<4x4xf32>
  %o = zt.matmul %p, %v : (tensor<4x4xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %l = zt.mse %o, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
