// Grouped-query causal attention: 6 query heads read 2 key and value heads
// (3 each) over 70 queries, two blocks of query rows; the key and value
// gradients sum over the query heads reading each, checked by finite
// differences.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 48 | FileCheck %s
// CHECK-DAG: ok{{ +}}q:
// CHECK-DAG: ok{{ +}}k:
// CHECK-DAG: ok{{ +}}v:
// CHECK: gradient check: PASS
func.func @grouped_attention_step(
    %t: tensor<1x6x70x3xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %q: tensor<1x6x70x4xf32> {zt.name = "q", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %k: tensor<1x2x70x4xf32> {zt.name = "k", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %v: tensor<1x2x70x3xf32> {zt.name = "v", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %y, %lse = zt.attention %q, %k, %v, scale = 7.000000e-01 causal : (tensor<1x6x70x4xf32>, tensor<1x2x70x4xf32>, tensor<1x2x70x3xf32>) -> (tensor<1x6x70x3xf32>, tensor<1x6x70xf32>)
  %l = zt.mse %y, %t : (tensor<1x6x70x3xf32>, tensor<1x6x70x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
