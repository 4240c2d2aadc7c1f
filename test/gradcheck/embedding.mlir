// embedding of 12 indices into a 4-row table, so rows repeat: the fused
// embedding_grad rule adds every position's gradient into its row.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}table:
// CHECK-NEXT: gradient check: PASS
func.func @embedding_step(
    %ids: tensor<2x6xi32> {zt.name = "ids", zt.role = #zt.role<input>},
    %t: tensor<2x6x3xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %table: tensor<4x3xf32> {zt.name = "table", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %e = zt.embedding %table, %ids : (tensor<4x3xf32>, tensor<2x6xi32>) -> tensor<2x6x3xf32>
  %l = zt.mse %e, %t : (tensor<2x6x3xf32>, tensor<2x6x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
