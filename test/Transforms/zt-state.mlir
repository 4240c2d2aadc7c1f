// State the step writes (BatchNorm's running statistics): a `state`
// argument and a result tied to it. zt-autodiff keeps the update after the
// loss, with no gradient through it; zt-optimizer leaves it alone; with
// accumulation every microbatch updates it (as PyTorch's forward does) and
// the apply entry does not; zt-plan-memory computes it straight into the
// state's persistent slot, which the independent checker accepts.
// RUN: zt-opt %s -zt-autodiff=recompute=false | FileCheck %s --check-prefix=AD
// RUN: zt-opt %s -zt-autodiff="accumulate=true recompute=false" -zt-optimizer="optimizer=sgd lr=0.5" | FileCheck %s --check-prefix=ACC
// RUN: zt-opt %s -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.5" -zt-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: zt-opt %s -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.5" -zt-plan-memory | %python %S/../tools/check_zplan.py - | FileCheck %s --check-prefix=CHECKER

// AD-LABEL: func.func @running_mean
// AD-SAME: %[[RM:[a-z0-9]+]]: tensor<2xf32> {zt.init = #zt.init<zeros>, zt.name = "bn.running_mean", zt.role = #zt.role<state>}
// AD-SAME: -> (tensor<f32> {zt.name = "loss"}, tensor<2xf32> {zt.name = "bn.running_mean", zt.tied = 2 : i64}, tensor<2xf32> {zt.gradient_of = 1 : i64, zt.name = "w.grad"})
// AD: %[[M:.+]] = zt.mean %{{.+}}, dims = [0]
// AD: %[[OLD:.+]] = zt.scale %[[RM]], factor = 9.000000e-01
// AD: %[[NEW:.+]] = zt.scale %[[M]], factor = 1.000000e-01
// AD: %[[UPD:.+]] = zt.add %[[OLD]], %[[NEW]]
// AD: return %{{.+}}, %[[UPD]], %{{.+}} :

// ACC-LABEL: func.func @running_mean
// ACC-SAME: -> (tensor<f32> {zt.name = "loss"}, tensor<2xf32> {zt.name = "bn.running_mean", zt.tied = 2 : i64}, tensor<2xf32> {zt.gradient_of = 1 : i64, zt.name = "w.grad_acc", zt.tied = 3 : i64})
// ACC-SAME: zt.entry = "microbatch"
// ACC-LABEL: func.func @running_mean_apply
// ACC-NOT: running_mean
// ACC: return

// PLAN-LABEL: zplan.entry @running_mean kind = train_step
// PLAN: %[[RM:.+]] = zplan.slot persistent offset = {{[0-9]+}} size = 8 name = "bn.running_mean" {init = #zt.init<zeros>}
// PLAN: zplan.launch "add"(%{{.+}}, %{{.+}}) -> (%[[RM]])
// CHECKER: entry @running_mean: {{.*}}: ok
func.func @running_mean(%x: tensor<4x2xf32> {zt.role = #zt.role<input>, zt.name = "x"},
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
