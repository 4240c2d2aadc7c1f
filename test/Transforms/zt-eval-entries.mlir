// Eval and predict entries beside the training step: forwards written by
// their author (dropout off, BatchNorm reading its running statistics),
// entered as `zt.entry = "eval"` / `"predict"`. zt-autodiff checks and names
// them and leaves their bodies alone (no gradient); zt-optimizer does not
// touch them; zt-plan-memory plans each its own arena in the one plan and
// shares the parameters and state by name: one persistent slot each, at one
// offset, that no eval or predict launch writes.
// RUN: zt-opt %s -zt-autodiff=recompute=false | FileCheck %s --check-prefix=AD
// RUN: zt-opt %s -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.5" -zt-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: zt-opt %s -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.5" -zt-plan-memory | %python %S/../tools/check_zplan.py - | FileCheck %s --check-prefix=CHECKER

// AD-LABEL: func.func @step(
// AD-SAME: zt.entry = "train_step"
// AD-LABEL: func.func @step_eval(
// AD-SAME: %{{.+}}: tensor<4x2xf32> {zt.name = "x", zt.role = #zt.role<input>}
// AD-SAME: -> (tensor<f32> {zt.name = "loss"})
// AD-SAME: zt.entry = "eval"
// AD-NOT: zt.scale
// AD: return
// AD-LABEL: func.func @step_predict(
// AD-SAME: -> (tensor<4x2xf32> {zt.name = "scores"})
// AD-SAME: zt.entry = "predict"

// PLAN-LABEL: zplan.entry @step kind = train_step
// PLAN: zplan.slot persistent offset = [[W:[0-9]+]] size = 8 name = "w"
// PLAN: zplan.slot persistent offset = [[RM:[0-9]+]] size = 8 name = "bn.running_mean"
// PLAN-LABEL: zplan.entry @step_eval kind = eval
// PLAN-DAG: zplan.slot persistent offset = [[W]] size = 8 name = "w"
// PLAN-DAG: zplan.slot persistent offset = [[RM]] size = 8 name = "bn.running_mean"
// PLAN-DAG: zplan.slot output offset = 0 size = 4 name = "loss" role = loss
// PLAN-LABEL: zplan.entry @step_predict kind = predict
// PLAN-DAG: zplan.slot persistent offset = [[W]] size = 8 name = "w"
// PLAN-DAG: zplan.slot output offset = 0 size = 32 name = "scores" role = output
// PLAN-NOT: role = label
// CHECKER: entry @step: {{.*}}: ok
// CHECKER: entry @step_eval: {{.*}}: ok
// CHECKER: entry @step_predict: {{.*}}: ok
func.func @step(%x: tensor<4x2xf32> {zt.role = #zt.role<input>, zt.name = "x"},
                %w: tensor<2xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>, zt.name = "w"},
                %rm: tensor<2xf32> {zt.role = #zt.role<state>, zt.init = #zt.init<zeros>, zt.name = "bn.running_mean"})
    -> (tensor<f32>, tensor<2xf32> {zt.tied = 2 : i64}) {
  %wb = zt.broadcast_in_dim %w, dims = [1] : (tensor<2xf32>) -> tensor<4x2xf32>
  %h = zt.mul %x, %wb : tensor<4x2xf32>
  %m = zt.mean %h, dims = [0] : (tensor<4x2xf32>) -> tensor<2xf32>
  %old = zt.scale %rm, factor = 0.9 : tensor<2xf32>
  %new = zt.scale %m, factor = 0.1 : tensor<2xf32>
  %upd = zt.add %old, %new : tensor<2xf32>
  %l = zt.sum %h, dims = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  return %l, %upd : tensor<f32>, tensor<2xf32>
}

func.func @step_eval(%x: tensor<4x2xf32> {zt.role = #zt.role<input>, zt.name = "x"},
                     %w: tensor<2xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>, zt.name = "w"},
                     %rm: tensor<2xf32> {zt.role = #zt.role<state>, zt.init = #zt.init<zeros>, zt.name = "bn.running_mean"})
    -> tensor<f32> attributes {zt.entry = "eval"} {
  %wb = zt.broadcast_in_dim %w, dims = [1] : (tensor<2xf32>) -> tensor<4x2xf32>
  %rb = zt.broadcast_in_dim %rm, dims = [1] : (tensor<2xf32>) -> tensor<4x2xf32>
  %c = zt.sub %x, %rb : tensor<4x2xf32>
  %h = zt.mul %c, %wb : tensor<4x2xf32>
  %l = zt.sum %h, dims = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

func.func @step_predict(%x: tensor<4x2xf32> {zt.role = #zt.role<input>, zt.name = "x"},
                        %w: tensor<2xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>, zt.name = "w"})
    -> (tensor<4x2xf32> {zt.name = "scores"}) attributes {zt.entry = "predict"} {
  %wb = zt.broadcast_in_dim %w, dims = [1] : (tensor<2xf32>) -> tensor<4x2xf32>
  %h = zt.mul %x, %wb : tensor<4x2xf32>
  return %h : tensor<4x2xf32>
}
