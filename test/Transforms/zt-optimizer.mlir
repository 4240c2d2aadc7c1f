// zt-optimizer replaces returned gradients with in-place updates: each
// update's results are returned tied to the persistent argument they
// overwrite, and optimizer state is added as zero-initialised arguments.
// RUN: zt-opt %s -split-input-file -zt-optimizer="optimizer=sgd lr=0.5" | FileCheck %s --check-prefix=SGD
// RUN: zt-opt %s -split-input-file -zt-optimizer="optimizer=sgd lr=0.5 momentum=0.9 nesterov=true weight-decay=0.01" | FileCheck %s --check-prefix=MOM
// RUN: zt-opt %s -split-input-file -zt-optimizer="optimizer=adamw lr=0.001 beta1=0.8 weight-decay=0.1" | FileCheck %s --check-prefix=ADAM
// RUN: zt-opt %s -split-input-file -zt-optimizer="optimizer=sgd lr=0.5 grad-scale=0.25" | FileCheck %s --check-prefix=SCALE

// A training step as zt-autodiff leaves it: the loss and one gradient.
// (Attributes equal to the op's defaults are not printed.)
// SGD-LABEL: func.func @step
// SGD-SAME: (%[[X:[a-z0-9]+]]: {{.+}}, %[[W:[a-z0-9]+]]: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "w", zt.role = #zt.role<parameter>})
// SGD-SAME: -> (tensor<f32> {zt.name = "loss"}, tensor<8xf32> {zt.name = "w", zt.tied = 1 : i64})
// SGD: %[[NEW:.+]] = zt.sgd %[[W]], %[[G:.+]] {lr = 5.000000e-01 : f64} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// SGD-NEXT: return %{{.+}}, %[[NEW]]

// Momentum adds one buffer per parameter, tied like the parameter.
// MOM-LABEL: func.func @step
// MOM-SAME: %[[W:[a-z0-9]+]]: tensor<8xf32> {{.+}}, %[[M:[a-z0-9]+]]: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "w.momentum", zt.role = #zt.role<optimizer_state>})
// MOM-SAME: -> (tensor<f32> {zt.name = "loss"}, tensor<8xf32> {zt.name = "w", zt.tied = 1 : i64}, tensor<8xf32> {zt.name = "w.momentum", zt.tied = 2 : i64})
// MOM: %[[NEW:.+]], %[[NEWM:.+]] = zt.sgd %[[W]], %{{.+}}, %[[M]] {lr = 5.000000e-01 : f64, momentum = 9.000000e-01 : f64, nesterov, weight_decay = 1.000000e-02 : f64}
// MOM-NEXT: return %{{.+}}, %[[NEW]], %[[NEWM]]

// AdamW adds two moments and, with no step counter present, a step argument.
// ADAM-LABEL: func.func @step
// ADAM-SAME: %[[W:[a-z0-9]+]]: tensor<8xf32> {{.+}}, %[[STEP:[a-z0-9]+]]: tensor<i64> {zt.name = "step", zt.role = #zt.role<step>}, %[[M:[a-z0-9]+]]: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "w.exp_avg", zt.role = #zt.role<optimizer_state>}, %[[V:[a-z0-9]+]]: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "w.exp_avg_sq", zt.role = #zt.role<optimizer_state>})
// ADAM-SAME: -> (tensor<f32> {zt.name = "loss"}, tensor<8xf32> {zt.name = "w", zt.tied = 1 : i64}, tensor<8xf32> {zt.name = "w.exp_avg", zt.tied = 3 : i64}, tensor<8xf32> {zt.name = "w.exp_avg_sq", zt.tied = 4 : i64})
// ADAM: %[[P:.+]], %[[M1:.+]], %[[V1:.+]] = zt.adamw %[[W]], %{{.+}}, %[[M]], %[[V]], %[[STEP]] {beta1 = 8.000000e-01 : f64, lr = 1.000000e-03 : f64, weight_decay = 1.000000e-01 : f64}
// ADAM-NEXT: return %{{.+}}, %[[P]], %[[M1]], %[[V1]]

// grad-scale multiplies the gradient first.
// SCALE-LABEL: func.func @step
// SCALE: %[[S:.+]] = zt.scale %{{.+}}, factor = 2.500000e-01 : tensor<8xf32>
// SCALE-NEXT: zt.sgd %{{.+}}, %[[S]]
func.func @step(%x: tensor<4x8xf32> {zt.name = "x", zt.role = #zt.role<input>},
                %w: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "w", zt.role = #zt.role<parameter>})
    -> (tensor<f32> {zt.name = "loss"}, tensor<8xf32> {zt.gradient_of = 1 : i64, zt.name = "w.grad"})
    attributes {zt.entry = "train_step"} {
  %wb = zt.broadcast_in_dim %w, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %y = zt.mul %x, %wb : tensor<4x8xf32>
  %l = zt.sum %y, dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %dw = zt.sum %x, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  return %l, %dw : tensor<f32>, tensor<8xf32>
}

// -----

// An existing step counter is reused by AdamW.
// ADAM-LABEL: func.func @with_step
// ADAM-SAME: (%[[STEP:[a-z0-9]+]]: tensor<i64> {zt.name = "t", zt.role = #zt.role<step>}
// ADAM-NOT: zt.role<step>
// ADAM: zt.adamw %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[STEP]]
func.func @with_step(%t: tensor<i64> {zt.name = "t", zt.role = #zt.role<step>},
                     %w: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "w", zt.role = #zt.role<parameter>})
    -> (tensor<f32> {zt.name = "loss"}, tensor<8xf32> {zt.gradient_of = 1 : i64, zt.name = "w.grad"})
    attributes {zt.entry = "train_step"} {
  %l = zt.sum %w, dims = [0] : (tensor<8xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<8xf32>
}

// -----

// A microbatch entry keeps accumulating; a separate apply entry updates each
// parameter from its accumulator and then zeroes the accumulator, all in
// place. Parameters and accumulators keep their names, so both entries
// address the same persistent slots.
// SGD-LABEL: func.func @micro
// SGD-SAME: attributes {zt.entry = "microbatch"}
// SGD-NOT: zt.sgd
// SGD-LABEL: func.func @micro_apply
// SGD-SAME: (%[[W:[a-z0-9]+]]: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "w", zt.role = #zt.role<parameter>}, %[[A:[a-z0-9]+]]: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "w.grad_acc", zt.role = #zt.role<accumulator>})
// SGD-SAME: -> (tensor<8xf32> {zt.name = "w", zt.tied = 0 : i64}, tensor<8xf32> {zt.name = "w.grad_acc", zt.tied = 1 : i64})
// SGD-SAME: attributes {zt.entry = "apply"}
// SGD-NEXT: %[[NEW:.+]] = zt.sgd %[[W]], %[[A]]
// SGD-NEXT: %[[ZERO:.+]] = zt.constant dense<0.000000e+00> : tensor<8xf32>
// SGD-NEXT: return %[[NEW]], %[[ZERO]]

// With grad-scale (1/K for K microbatches) the accumulator is scaled first.
// SCALE-LABEL: func.func @micro_apply
// SCALE: %[[S:.+]] = zt.scale %{{.+}}, factor = 2.500000e-01
// SCALE-NEXT: zt.sgd %{{.+}}, %[[S]]
func.func @micro(%w: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "w", zt.role = #zt.role<parameter>},
                 %acc: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "w.grad_acc", zt.role = #zt.role<accumulator>})
    -> (tensor<f32> {zt.name = "loss"}, tensor<8xf32> {zt.gradient_of = 0 : i64, zt.name = "w.grad_acc", zt.tied = 1 : i64})
    attributes {zt.entry = "microbatch"} {
  %l = zt.sum %w, dims = [0] : (tensor<8xf32>) -> tensor<f32>
  %sum = zt.add %acc, %w : tensor<8xf32>
  return %l, %sum : tensor<f32>, tensor<8xf32>
}
