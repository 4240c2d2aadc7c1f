// Fused causal attention with a padding mask (the second sequence's last 20
// keys masked) over 70 queries, two blocks of query rows: the masked keys
// get no gradient through the probabilities, the others do, checked by
// finite differences.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 48 | FileCheck %s
// CHECK-DAG: ok{{ +}}q:
// CHECK-DAG: ok{{ +}}k:
// CHECK-DAG: ok{{ +}}v:
// CHECK: gradient check: PASS
func.func @masked_attention_step(
    %t: tensor<2x70x3xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %q: tensor<2x70x4xf32> {zt.name = "q", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %k: tensor<2x70x4xf32> {zt.name = "k", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %v: tensor<2x70x3xf32> {zt.name = "v", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %lengths = zt.constant dense<[[[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]], [[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]]]> : tensor<2x1x70xi32>
  %zero = zt.constant dense<0> : tensor<2x1x70xi32>
  %pad = zt.ne %lengths, %zero : tensor<2x1x70xi32> -> tensor<2x1x70xi1>
  %y, %lse = zt.attention %q, %k, %v mask %pad, scale = 7.000000e-01 causal : (tensor<2x70x4xf32>, tensor<2x70x4xf32>, tensor<2x70x3xf32>, tensor<2x1x70xi1>) -> (tensor<2x70x3xf32>, tensor<2x70xf32>)
  %l = zt.mse %y, %t : (tensor<2x70x3xf32>, tensor<2x70x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
