// div by positive parameters: dy / rhs for lhs, -dy lhs / rhs^2 for rhs.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}a:
// CHECK-NEXT: ok{{ +}}b:
// CHECK-NEXT: gradient check: PASS
func.func @div_step(
    %x: tensor<4x6xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %t: tensor<4x6xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %a: tensor<4x6xf32> {zt.name = "a", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %b: tensor<4x6xf32> {zt.name = "b", zt.role = #zt.role<parameter>, zt.init = #zt.init<uniform(low = 0.5, high = 2.0)>}) -> tensor<f32> {
  %c = zt.div %a, %b : tensor<4x6xf32>
  %y = zt.mul %c, %x : tensor<4x6xf32>
  %l = zt.mse %y, %t : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
