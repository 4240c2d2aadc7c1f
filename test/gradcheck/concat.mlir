// concat along the last and the first dimension, with an input among the
// operands: each parameter gets its own part of the gradient.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}c:
// CHECK-NEXT: ok{{ +}}a:
// CHECK-NEXT: ok{{ +}}b:
// CHECK-NEXT: gradient check: PASS
func.func @concat_step(
    %x: tensor<2x3xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %t: tensor<5x7xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %a: tensor<2x4xf32> {zt.name = "a", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %b: tensor<2x4xf32> {zt.name = "b", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %c: tensor<3x7xf32> {zt.name = "c", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %ab = zt.mul %a, %b : tensor<2x4xf32>
  %row = zt.concat(%x, %ab) dim = 1 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>
  %y = zt.concat(%c, %row) dim = 0 : (tensor<3x7xf32>, tensor<2x7xf32>) -> tensor<5x7xf32>
  %l = zt.mse %y, %t : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
