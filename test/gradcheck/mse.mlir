// mse against a label target and against a target computed from a parameter:
// the fused mse_grad rule for the prediction, its negation for the target.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}q:
// CHECK-NEXT: ok{{ +}}p:
// CHECK-NEXT: gradient check: PASS
func.func @mse_step(
    %x: tensor<5x3xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %t: tensor<5x3xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %p: tensor<5x3xf32> {zt.name = "p", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %q: tensor<5x3xf32> {zt.name = "q", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %px = zt.mul %p, %x : tensor<5x3xf32>
  %l1 = zt.mse %px, %t : (tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<f32>
  %tq = zt.tanh %q : tensor<5x3xf32>
  %l2 = zt.mse %p, %tq : (tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<f32>
  %l = zt.add %l1, %l2 : tensor<f32>
  return %l : tensor<f32>
}
