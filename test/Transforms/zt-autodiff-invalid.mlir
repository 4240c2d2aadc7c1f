// What zt-autodiff rejects, each with the rule it breaks.
// RUN: zt-opt %s -split-input-file -zt-autodiff -verify-diagnostics

// The loss is one rank-0 float.
// expected-error @+1 {{must return a rank-0 floating-point loss, got 'tensor<4xf32>'}}
func.func @vector_loss(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// -----

// After the loss come only new values of state, tied to it.
// expected-error @+1 {{result #1: after the loss, a training-step function returns only new values of 'state' arguments, tied to them ('zt.tied')}}
func.func @two_results(%w: tensor<f32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> (tensor<f32>, tensor<f32>) {
  return %w, %w : tensor<f32>, tensor<f32>
}

// -----

// A parameter is trained, not written by the step.
// expected-error @+1 {{result #1: after the loss, a training-step function returns only new values of 'state' arguments, tied to them ('zt.tied')}}
func.func @tied_parameter(%w: tensor<f32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> (tensor<f32>, tensor<f32> {zt.tied = 0 : i64}) {
  %n = zt.neg %w : tensor<f32>
  return %w, %n : tensor<f32>, tensor<f32>
}

// -----

// One new value per state and step.
// expected-error @+1 {{result #2: state argument #1 is updated by an earlier result}}
func.func @updated_twice(%w: tensor<f32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                         %s: tensor<f32> {zt.role = #zt.role<state>, zt.init = #zt.init<zeros>})
    -> (tensor<f32>, tensor<f32> {zt.tied = 1 : i64}, tensor<f32> {zt.tied = 1 : i64}) {
  %n = zt.neg %s : tensor<f32>
  return %w, %n, %n : tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{must return the rank-0 loss first; it returns nothing}}
func.func @no_result(%w: tensor<f32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) {
  return
}

// -----

// expected-error @+1 {{has no parameter argument to differentiate}}
func.func @no_parameter(%x: tensor<4xf32> {zt.role = #zt.role<input>}) -> tensor<f32> {
  %l = zt.sum %x, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Once one argument has a role, all need one.
// expected-error @+1 {{argument #1 has no 'zt.role'; once one argument of a training-step function has a role, every argument needs one}}
func.func @missing_role(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}, %x: tensor<4xf32>) -> tensor<f32> {
  %y = zt.mul %w, %x : tensor<4xf32>
  %l = zt.sum %y, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Names identify persistent tensors in plans and checkpoints.
// expected-error @+1 {{argument #1: the name 'w' is used by an earlier argument}}
func.func @duplicate_names(%a: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "w"},
                           %b: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "w"}) -> tensor<f32> {
  %y = zt.mul %a, %b : tensor<4xf32>
  %l = zt.sum %y, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Accumulators and optimizer state are the passes' to add.
// expected-error @+1 {{argument #1 has role 'accumulator', which zt-autodiff and zt-optimizer add themselves}}
func.func @own_accumulator(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                           %a: tensor<4xf32> {zt.role = #zt.role<accumulator>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %l = zt.sum %w, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An optimizer update in the forward has no gradient.
func.func @sgd_in_forward(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  // expected-error @+1 {{has no gradient rule: optimizer updates belong after zt-autodiff (zt-optimizer adds them)}}
  %n = zt.sgd %w, %w {lr = 0.1 : f64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = zt.sum %n, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Backward ops are differentiated once: no second-order gradients.
func.func @second_order(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  // expected-error @+1 {{has no gradient rule (zt-autodiff differentiates forward ops once; higher-order gradients are not supported)}}
  %g = zt.tanh_grad %w, %w : tensor<4xf32>
  %l = zt.sum %g, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Ops of other dialects have no rule.
func.func private @helper(tensor<4xf32>) -> tensor<4xf32>
func.func @call_in_forward(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  // expected-error @+1 {{has no gradient rule: zt-autodiff differentiates zt ops only}}
  %c = func.call @helper(%w) : (tensor<4xf32>) -> tensor<4xf32>
  %l = zt.sum %c, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// attention's logsumexp is for its backward; a loss through it has no rule.
func.func @attention_logsumexp_loss(%q: tensor<2x5x4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                                    %k: tensor<2x6x4xf32> {zt.role = #zt.role<input>},
                                    %v: tensor<2x6x3xf32> {zt.role = #zt.role<input>}) -> tensor<f32> {
  // expected-error @+1 {{has a differentiated use of its logsumexp result}}
  %y, %lse = zt.attention %q, %k, %v, scale = 0.5 : (tensor<2x5x4xf32>, tensor<2x6x4xf32>, tensor<2x6x3xf32>) -> (tensor<2x5x3xf32>, tensor<2x5xf32>)
  %l = zt.sum %lse, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// batch_norm's gradient is training-mode BatchNorm's, which counts its
// statistics' dependence on its input: only with its input's own.
func.func @batch_norm_stats_of_another(%x: tensor<4x3xf32> {zt.role = #zt.role<input>},
    %w: tensor<4x3xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %g: tensor<3xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>},
    %b: tensor<3xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %h = zt.add %x, %w : tensor<4x3xf32>
  %s = zt.batch_norm_stats %x : (tensor<4x3xf32>) -> tensor<2x3xf32>
  // expected-error @+1 {{has a gradient only with its statistics from zt.batch_norm_stats of its own input}}
  %y = zt.batch_norm %h, %s, %g, %b {epsilon = 1.0e-05 : f64} : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %l = zt.sum %y, dims = [0, 1] : (tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
