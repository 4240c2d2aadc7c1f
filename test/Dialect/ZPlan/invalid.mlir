// Each case breaks one zplan verifier rule and checks its message.
// RUN: zt-opt %s -split-input-file -verify-diagnostics

// An arena below its lower bound is impossible.
// expected-error @+1 {{arena = 100 is below its lower bound 200}}
zplan.entry @e kind = train_step arena = 100 lower_bound = 200 no_reuse = 300 {
  %t = zplan.slot arena offset = 0 size = 4 live = [0, 1] : memref<f32>
}

// -----

zplan.entry @e kind = train_step arena = 256 lower_bound = 4 no_reuse = 4 {
  // expected-error @+1 {{ends at byte 260, past the entry's arena of 256 bytes}}
  %t = zplan.slot arena offset = 256 size = 4 live = [0, 1] : memref<f32>
}

// -----

zplan.entry @e kind = train_step arena = 256 lower_bound = 4 no_reuse = 4 {
  // expected-error @+1 {{size 2 is smaller than the 4 bytes of 'memref<f32>'}}
  %t = zplan.slot arena offset = 0 size = 2 live = [0, 1] : memref<f32>
}

// -----

zplan.entry @e kind = train_step arena = 256 lower_bound = 4 no_reuse = 4 {
  // expected-error @+1 {{an arena slot needs its lifetime 'live'}}
  %t = zplan.slot arena offset = 0 size = 4 : memref<f32>
}

// -----

zplan.entry @e kind = train_step arena = 256 lower_bound = 4 no_reuse = 4 {
  // expected-error @+1 {{live must be [first, last] with 0 <= first < last}}
  %t = zplan.slot arena offset = 0 size = 4 live = [3, 3] : memref<f32>
}

// -----

zplan.entry @e kind = train_step arena = 0 lower_bound = 0 no_reuse = 0 {
  // expected-error @+1 {{only input and output slots have a role}}
  %t = zplan.slot persistent offset = 0 size = 4 name = "w" role = input {init = #zt.init<zeros>} : memref<f32>
}

// -----

zplan.entry @e kind = train_step arena = 0 lower_bound = 0 no_reuse = 0 {
  // expected-error @+1 {{an input slot's role is 'input', 'label' or 'step', got 'loss'}}
  %t = zplan.slot input offset = 0 size = 4 name = "x" role = loss : memref<f32>
}

// -----

zplan.entry @e kind = train_step arena = 0 lower_bound = 0 no_reuse = 0 {
  // expected-error @+1 {{an output slot's role is 'loss', 'gradient' or 'output', got 'label'}}
  %t = zplan.slot output offset = 0 size = 4 name = "y" role = label : memref<f32>
}

// -----

zplan.entry @e kind = train_step arena = 0 lower_bound = 0 no_reuse = 0 {
  // expected-error @+1 {{a constant slot needs its data in 'init'}}
  %t = zplan.slot constant offset = 0 size = 4 : memref<f32>
}

// -----

zplan.entry @e kind = train_step arena = 0 lower_bound = 0 no_reuse = 0 {
  // expected-error @+1 {{only persistent and constant slots have an initial value}}
  %t = zplan.slot input offset = 0 size = 4 name = "x" {init = #zt.init<zeros>} : memref<f32>
}

// -----

zplan.entry @e kind = train_step arena = 256 lower_bound = 32 no_reuse = 32 {
  %t = zplan.slot arena offset = 0 size = 32 live = [0, 1] : memref<8xf32>
  // expected-error @+1 {{a view keeps the bytes: 32 vs 16}}
  %v = zplan.view %t : memref<8xf32> to memref<4xf32>
}

// -----

zplan.entry @e kind = train_step arena = 256 lower_bound = 32 no_reuse = 32 {
  %t = zplan.slot arena offset = 0 size = 32 live = [0, 1] : memref<8xf32>
  // expected-error @+1 {{reads element 10 of a source of 8}}
  %v = zplan.broadcast_view %t strides = [1, 1] : memref<8xf32> to memref<4x8xf32>
}

// -----

zplan.entry @e kind = train_step arena = 256 lower_bound = 32 no_reuse = 32 {
  %t = zplan.slot arena offset = 0 size = 32 live = [0, 1] : memref<8xf32>
  // expected-error @+1 {{needs one stride per result dimension, got 1 for rank 2}}
  %v = zplan.broadcast_view %t strides = [1] : memref<8xf32> to memref<4x8xf32>
}

// -----

zplan.entry @e kind = train_step arena = 256 lower_bound = 32 no_reuse = 32 {
  %t = zplan.slot arena offset = 0 size = 32 live = [0, 1] : memref<8xf32>
  // expected-error @+1 {{strides must not be negative}}
  %v = zplan.broadcast_view %t strides = [-1, 1] : memref<8xf32> to memref<4x8xf32>
}

// -----

// expected-error @+1 {{'zplan.alignment' must be a power of two, got 3}}
module attributes {zplan.alignment = 3 : i64} {
}

// -----

// The enums are keywords from one list (PlanEnums.h): a misspelt one is an
// error, never a silent default.
// expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [train_step, microbatch, apply, eval, predict]}}
zplan.entry @e kind = train_stp arena = 0 lower_bound = 0 no_reuse = 0 {
}

// -----

zplan.entry @e kind = train_step arena = 0 lower_bound = 0 no_reuse = 0 {
  // expected-error @+1 {{enum values for attribute 'role' [none, input, label, step, loss, gradient, output]}}
  %x = zplan.slot input offset = 0 size = 32 name = "x" role = lable : memref<8xf32>
}

// -----

zplan.entry @e kind = train_step arena = 0 lower_bound = 0 no_reuse = 0 {
  // expected-error @+1 {{an input slot's role is 'input', 'label' or 'step', got 'none'}}
  %x = zplan.slot input offset = 0 size = 32 name = "x" role = none : memref<8xf32>
}

// -----

zplan.entry @e kind = train_step arena = 0 lower_bound = 0 no_reuse = 0 {
  %x = zplan.slot input offset = 0 size = 32 name = "x" role = input : memref<8xf32>
  %y = zplan.slot output offset = 0 size = 32 name = "y" role = loss : memref<8xf32>
  // expected-error @+1 {{enum values for attribute 'phase' [forward, backward, update, recompute]}}
  zplan.launch "neg"(%x) -> (%y) {} phase = backwrd : (memref<8xf32>) -> (memref<8xf32>)
}
