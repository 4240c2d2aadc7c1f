// fan-out: one intermediate value (tanh of a parameter) feeds four ops, so its
// gradient is the sum of four contributions before tanh_grad.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}m:
// CHECK-NEXT: ok{{ +}}w:
// CHECK-NEXT: gradient check: PASS
func.func @fan_out_step(
    %x: tensor<3x4xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %t: tensor<3x4xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %w: tensor<3x4xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %m: tensor<4x4xf32> {zt.name = "m", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.5)>}) -> tensor<f32> {
  %h = zt.tanh %w : tensor<3x4xf32>
  %a = zt.mul %h, %x : tensor<3x4xf32>
  %e = zt.exp %h : tensor<3x4xf32>
  %hm = zt.matmul %h, %m : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %ae = zt.add %a, %e : tensor<3x4xf32>
  %s = zt.sub %ae, %hm : tensor<3x4xf32>
  %y = zt.mul %s, %h : tensor<3x4xf32>
  %l = zt.mse %y, %t : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
