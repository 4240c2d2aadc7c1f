// Fused causal attention over 70 queries: two blocks of query rows (64 and
// 6), so the backward's sums over blocks (key and value gradients) and the
// causal widths of each block are checked, not only a single block.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 48 | FileCheck %s
// CHECK-DAG: ok{{ +}}q:
// CHECK-DAG: ok{{ +}}k:
// CHECK-DAG: ok{{ +}}v:
// CHECK: gradient check: PASS
func.func @attention_step(
    %t: tensor<2x70x3xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %q: tensor<2x70x4xf32> {zt.name = "q", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %k: tensor<2x70x4xf32> {zt.name = "k", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %v: tensor<2x70x3xf32> {zt.name = "v", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %y, %lse = zt.attention %q, %k, %v, scale = 7.000000e-01 causal : (tensor<2x70x4xf32>, tensor<2x70x4xf32>, tensor<2x70x3xf32>) -> (tensor<2x70x3xf32>, tensor<2x70xf32>)
  %l = zt.mse %y, %t : (tensor<2x70x3xf32>, tensor<2x70x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
