// What zt-autodiff rejects in an eval or predict entry, each with the rule
// it breaks.
// RUN: zt-opt %s -split-input-file -zt-autodiff -verify-diagnostics

// An eval entry returns its loss and nothing else.
// expected-error @+1 {{an eval entry returns one rank-0 floating-point loss; it returns 'tensor<f32>', 'tensor<2xf32>'}}
func.func @two(%w: tensor<2xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>, zt.name = "w"})
    -> (tensor<f32>, tensor<2xf32>) attributes {zt.entry = "eval"} {
  %l = zt.sum %w, dims = [0] : (tensor<2xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<2xf32>
}

// -----

// Evaluating writes no state.
// expected-error @+1 {{result #0: an eval entry writes no persistent tensor and has no gradients (no 'zt.tied' or 'zt.gradient_of')}}
func.func @writes(%s: tensor<f32> {zt.role = #zt.role<state>, zt.init = #zt.init<zeros>, zt.name = "s"})
    -> (tensor<f32> {zt.tied = 0 : i64}) attributes {zt.entry = "eval"} {
  return %s : tensor<f32>
}

// -----

// A prediction needs no label.
// expected-error @+1 {{argument #1 is a label; a predict entry takes inputs only (its results are the predictions)}}
func.func @labelled(%x: tensor<2xf32> {zt.role = #zt.role<input>, zt.name = "x"},
                    %y: tensor<2xi32> {zt.role = #zt.role<label>, zt.name = "y"})
    -> tensor<2xf32> attributes {zt.entry = "predict"} {
  return %x : tensor<2xf32>
}

// -----

// Optimizer state is the training entries' own.
// expected-error @+1 {{argument #0 has role 'optimizer_state'; an eval entry reads only parameters, state, inputs and labels}}
func.func @moments(%m: tensor<f32> {zt.role = #zt.role<optimizer_state>, zt.init = #zt.init<zeros>, zt.name = "m"})
    -> tensor<f32> attributes {zt.entry = "eval"} {
  return %m : tensor<f32>
}

// -----

// Predictions have names of their own.
// expected-error @+1 {{result #1: the name 'y' is used by an earlier result}}
func.func @same(%x: tensor<2xf32> {zt.role = #zt.role<input>, zt.name = "x"})
    -> (tensor<2xf32> {zt.name = "y"}, tensor<2xf32> {zt.name = "y"}) attributes {zt.entry = "predict"} {
  return %x, %x : tensor<2xf32>, tensor<2xf32>
}
