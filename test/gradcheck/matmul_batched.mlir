// Batched matmul (rank-3 operands, one matrix pair per batch entry) without
// and with transpose flags: the gradients stay per batch entry.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}c:
// CHECK-NEXT: ok{{ +}}d:
// CHECK-NEXT: ok{{ +}}a:
// CHECK-NEXT: ok{{ +}}b:
// CHECK-NEXT: gradient check: PASS
func.func @matmul_batched_step(
    %t: tensor<2x3x2xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %a: tensor<2x3x4xf32> {zt.name = "a", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %b: tensor<2x4x2xf32> {zt.name = "b", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %c: tensor<2x4x3xf32> {zt.name = "c", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %d: tensor<2x2x4xf32> {zt.name = "d", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %ab = zt.matmul %a, %b : (tensor<2x3x4xf32>, tensor<2x4x2xf32>) -> tensor<2x3x2xf32>
  %cd = zt.matmul %c, %d {transpose_lhs, transpose_rhs} : (tensor<2x4x3xf32>, tensor<2x2x4xf32>) -> tensor<2x3x2xf32>
  %y = zt.mul %ab, %cd : tensor<2x3x2xf32>
  %l = zt.mse %y, %t : (tensor<2x3x2xf32>, tensor<2x3x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
