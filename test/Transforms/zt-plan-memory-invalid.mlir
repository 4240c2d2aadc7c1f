// What zt-plan-memory rejects.
// RUN: zt-opt %s -split-input-file -zt-plan-memory -verify-diagnostics
// RUN: not zt-opt %s -zt-plan-memory="alignment=100" -split-input-file 2>&1 | FileCheck %s --check-prefix=ALIGN
// RUN: not zt-opt %s -zt-plan-memory="algorithm=best" -split-input-file 2>&1 | FileCheck %s --check-prefix=ALGO
// ALIGN: zt-plan-memory option 'alignment' must be a power of two, got 100
// ALGO: zt-plan-memory option 'algorithm': unknown 'best'; expected one of auto, exact, greedy-best, greedy-size, skyline

// A module with no entry point has nothing to plan.
// expected-error @+1 {{zt-plan-memory found no entry point: run zt-autodiff first}}
module {
  func.func @forward(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
    %l = zt.sum %w, dims = [0] : (tensor<4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Entries share persistent tensors by name: one name, one tensor.
func.func @first(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "w"})
    -> (tensor<f32>) attributes {zt.entry = "train_step"} {
  %l = zt.sum %w, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
// expected-error @+1 {{argument #0 ('w') differs in type or initializer from the persistent tensor of that name in an earlier entry}}
func.func @second(%w: tensor<8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "w"})
    -> (tensor<f32>) attributes {zt.entry = "apply"} {
  %l = zt.sum %w, dims = [0] : (tensor<8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The liveness analysis's rules hold here too: only zt ops can be planned.
func.func private @helper(tensor<4xf32>) -> tensor<4xf32>
func.func @call(%x: tensor<4xf32> {zt.role = #zt.role<input>}) -> tensor<4xf32> attributes {zt.entry = "train_step"} {
  // expected-error @+1 {{is not a zt op: the liveness analysis (and the plan) cover zt ops only}}
  %y = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
