// What the liveness analysis rejects in an entry point.
// RUN: zt-opt %s -split-input-file -zt-print-liveness -verify-diagnostics -o /dev/null

// Only zt ops have kernels and buffers a plan can schedule.
func.func private @helper(tensor<4xf32>) -> tensor<4xf32>
func.func @call(%x: tensor<4xf32> {zt.role = #zt.role<input>}) -> tensor<4xf32> attributes {zt.entry = "train_step"} {
  // expected-error @+1 {{is not a zt op: the liveness analysis (and the plan) cover zt ops only}}
  %y = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Every argument needs a role to get a memory kind.
// expected-error @+1 {{argument #0 has no 'zt.role': every argument of an entry point needs one to get a memory kind}}
func.func @no_role(%x: tensor<4xf32>) -> tensor<4xf32> attributes {zt.entry = "train_step"} {
  %y = zt.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// One persistent slot cannot receive two new values in one step.
// expected-error @+1 {{result #1 is tied to argument #0, which an earlier result already overwrites}}
func.func @tied_twice(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>})
    -> (tensor<4xf32> {zt.tied = 0 : i64}, tensor<4xf32> {zt.tied = 0 : i64}) attributes {zt.entry = "train_step"} {
  %a = zt.exp %w : tensor<4xf32>
  %b = zt.neg %w : tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
