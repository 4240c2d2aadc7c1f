// Fused causal attention dropping out a third of its probabilities, over 70
// queries (two blocks of query rows): the mask, drawn from the step and the
// seed, is drawn again by the backward, checked by finite differences at a
// fixed step.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 48 | FileCheck %s
// CHECK-DAG: ok{{ +}}q:
// CHECK-DAG: ok{{ +}}k:
// CHECK-DAG: ok{{ +}}v:
// CHECK: gradient check: PASS
func.func @attention_dropout_step(
    %t: tensor<2x70x3xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %q: tensor<2x70x4xf32> {zt.name = "q", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %k: tensor<2x70x4xf32> {zt.name = "k", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %v: tensor<2x70x3xf32> {zt.name = "v", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %step: tensor<i64> {zt.name = "step", zt.role = #zt.role<step>}) -> tensor<f32> {
  %y, %lse = zt.attention %q, %k, %v step %step, scale = 7.000000e-01 causal dropout = 3.300000e-01 seed = 4 : (tensor<2x70x4xf32>, tensor<2x70x4xf32>, tensor<2x70x3xf32>, tensor<i64>) -> (tensor<2x70x3xf32>, tensor<2x70xf32>)
  %l = zt.mse %y, %t : (tensor<2x70x3xf32>, tensor<2x70x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
