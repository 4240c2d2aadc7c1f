// zt-optimizer with a learning-rate schedule: one zt.lr_schedule of the step
// counter (added as an argument when the step has none, as SGD's has not)
// at the top of the entry, whose factor every update takes; the learning
// rate it gives is returned as `lr`, after the loss.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.1 lr-warmup-steps=2 lr-decay=cosine lr-decay-steps=10 min-lr=0.025" | FileCheck %s
// CHECK-LABEL: func.func @mlp_loss
// CHECK-SAME: %[[STEP:[^:]+]]: tensor<i64> {zt.name = "step", zt.role = #zt.role<step>}
// CHECK-SAME: -> (tensor<f32> {zt.name = "loss"}, tensor<f32> {zt.name = "lr"},
// CHECK-NEXT: %[[F:.+]] = zt.lr_schedule %[[STEP]] {cosine, decay_steps = 10 : i64, min_factor = 2.500000e-01 : f64, warmup_steps = 2 : i64} : (tensor<i64>) -> tensor<f32>
// CHECK-NOT: zt.lr_schedule
// CHECK-COUNT-5: zt.sgd {{.+}} lr_factor %[[F]] {lr = 1.000000e-01 : f64}
// CHECK: %[[LR:.+]] = zt.scale %[[F]], factor = 1.000000e-01 : tensor<f32>
// CHECK: zt.sgd {{.+}} lr_factor %[[F]] {lr = 1.000000e-01 : f64}
// CHECK: return %{{.+}}, %[[LR]],

// AdamW reuses its step counter; with clipping the updates take both.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=adamw lr=0.1 clip-grad-norm=1.0 lr-decay=linear lr-decay-steps=100" | FileCheck %s --check-prefix=ADAMW
// ADAMW-COUNT-1: zt.role<step>
// ADAMW-NOT: zt.role<step>
// ADAMW: %[[F:.+]] = zt.lr_schedule %{{.+}} {decay_steps = 100 : i64, linear}
// ADAMW-COUNT-6: zt.adamw {{.+}} clip %{{.+}} lr_factor %[[F]] {lr = 1.000000e-01 : f64, max_grad_norm = 1.000000e+00 : f64

// Accumulation: the apply entry's counter (optimizer steps, not
// microbatches) drives the schedule; the microbatch entry has none.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff="accumulate=true" -zt-optimizer="optimizer=sgd lr=0.1 grad-scale=0.5 lr-warmup-steps=3" | FileCheck %s --check-prefix=ACC
// ACC-LABEL: func.func @mlp_loss(
// ACC-NOT: zt.lr_schedule
// ACC-LABEL: func.func @mlp_loss_apply(
// ACC-SAME: %[[STEP:[^:]+]]: tensor<i64> {zt.name = "step", zt.role = #zt.role<step>}
// ACC-SAME: -> (tensor<f32> {zt.name = "lr"},
// ACC-NEXT: %[[F:.+]] = zt.lr_schedule %[[STEP]] {warmup_steps = 3 : i64}
// ACC-COUNT-6: zt.sgd {{.+}} lr_factor %[[F]]

// ZeRO-1: each bucket's step on this rank's shard takes the one factor.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=adamw lr=0.1 data-parallel=true bucket-bytes=2000 shard-optimizer-state=true world-size=2 lr-warmup-steps=5" | FileCheck %s --check-prefix=ZERO
// ZERO: %[[F:.+]] = zt.lr_schedule
// ZERO-COUNT-3: zt.adamw {{.+}} lr_factor %[[F]] {{.+}} -> (tensor<{{[0-9]+}}xf32>,
// ZERO-NOT: zt.adamw

// Without a schedule nothing changes: no factor, no lr output.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.1" | FileCheck %s --check-prefix=NONE
// NONE-NOT: lr_schedule
// NONE-NOT: lr_factor
// NONE-NOT: "lr"

// Options out of range, or that mean nothing without a decay, name
// themselves.
// RUN: not zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="lr-decay=step" 2>&1 | FileCheck %s --check-prefix=KIND
// KIND: zt-optimizer option 'lr-decay' must be 'none', 'cosine' or 'linear', got 'step'
// RUN: not zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="lr-warmup-steps=-1" 2>&1 | FileCheck %s --check-prefix=WARM
// WARM: zt-optimizer option 'lr-warmup-steps' must be >= 0, got -1
// RUN: not zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="lr-decay-steps=10" 2>&1 | FileCheck %s --check-prefix=STEPS
// STEPS: zt-optimizer option 'lr-decay-steps' must be 0 without a decay (lr-decay cosine or linear), got 10
// RUN: not zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="lr-decay=cosine lr-warmup-steps=10 lr-decay-steps=10" 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: zt-optimizer option 'lr-decay-steps' must be > lr-warmup-steps (10): the step where the decay reaches min-lr, counted from 0, got 10
// RUN: not zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="lr=0.1 lr-decay=cosine lr-decay-steps=10 min-lr=0.2" 2>&1 | FileCheck %s --check-prefix=MIN
// MIN: zt-optimizer option 'min-lr' must be <= lr (0.1), got 0.2

// The output's name is the schedule's.
// RUN: not zt-opt %S/Inputs/input-named-lr.mlir -zt-optimizer="optimizer=sgd lr-warmup-steps=1" 2>&1 | FileCheck %s --check-prefix=CLASH
// CLASH: error: 'func.func' op argument #0 is named 'lr', the output the learning-rate schedule adds
