// A rank-2 rhs shared by every entry of a rank-3 lhs (a linear layer on
// [batch, seq, features]), plain and with each transpose flag: the weight's
// gradient sums over the batch.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}e:
// CHECK-NEXT: ok{{ +}}u:
// CHECK-NEXT: ok{{ +}}c:
// CHECK-NEXT: ok{{ +}}v:
// CHECK-NEXT: ok{{ +}}a:
// CHECK-NEXT: ok{{ +}}w:
// CHECK-NEXT: gradient check: PASS
func.func @matmul_shared_rhs_step(
    %t: tensor<2x3x2xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %a: tensor<2x3x4xf32> {zt.name = "a", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %w: tensor<4x2xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %c: tensor<2x4x3xf32> {zt.name = "c", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %v: tensor<2x4xf32> {zt.name = "v", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %e: tensor<2x3x4xf32> {zt.name = "e", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %u: tensor<2x4xf32> {zt.name = "u", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %aw = zt.matmul %a, %w : (tensor<2x3x4xf32>, tensor<4x2xf32>) -> tensor<2x3x2xf32>
  %cv = zt.matmul %c, %v {transpose_lhs, transpose_rhs} : (tensor<2x4x3xf32>, tensor<2x4xf32>) -> tensor<2x3x2xf32>
  %eu = zt.matmul %e, %u {transpose_rhs} : (tensor<2x3x4xf32>, tensor<2x4xf32>) -> tensor<2x3x2xf32>
  %p = zt.mul %aw, %cv : tensor<2x3x2xf32>
  %y = zt.add %p, %eu : tensor<2x3x2xf32>
  %l = zt.mse %y, %t : (tensor<2x3x2xf32>, tensor<2x3x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
