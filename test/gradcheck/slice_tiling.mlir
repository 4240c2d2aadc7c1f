// Slices that tile their operand (attention's q, k, v split): autodiff joins
// their gradients with one concat in offset order, here with the slices used
// out of order so a mix-up of the pieces shows.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zt-opt %s -zt-autodiff | FileCheck %s --check-prefix=IR --implicit-check-not=zt.slice_grad
// RUN: zcc-gradcheck %t.zplan --samples 64 | FileCheck %s
// IR: zt.concat
// CHECK: ok{{ +}}w:
// CHECK-NEXT: gradient check: PASS
func.func @slice_tiling_step(
    %x: tensor<3x4xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %t: tensor<3x4xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %w: tensor<3x12xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %c = zt.slice %w [0:3, 8:12] : (tensor<3x12xf32>) -> tensor<3x4xf32>
  %a = zt.slice %w [0:3, 0:4] : (tensor<3x12xf32>) -> tensor<3x4xf32>
  %b = zt.slice %w [0:3, 4:8] : (tensor<3x12xf32>) -> tensor<3x4xf32>
  %ax = zt.mul %a, %x : tensor<3x4xf32>
  %abx = zt.mul %ax, %b : tensor<3x4xf32>
  %y = zt.add %abx, %c : tensor<3x4xf32>
  %l = zt.mse %y, %t : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
