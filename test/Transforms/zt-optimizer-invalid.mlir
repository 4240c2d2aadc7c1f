// What zt-optimizer rejects: bad options, nothing to update, name clashes.
// RUN: zt-opt %s -split-input-file -zt-optimizer -verify-diagnostics
// RUN: not zt-opt %s -zt-optimizer="lr=-1" -split-input-file 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not zt-opt %s -zt-optimizer="optimizer=adam" -split-input-file 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not zt-opt %s -zt-optimizer="momentum=1.0" -split-input-file 2>&1 | FileCheck %s --check-prefix=MOM
// RUN: not zt-opt %s -zt-optimizer="nesterov=true" -split-input-file 2>&1 | FileCheck %s --check-prefix=NES
// RUN: not zt-opt %s -zt-optimizer="optimizer=adamw eps=0" -split-input-file 2>&1 | FileCheck %s --check-prefix=EPS
// RUN: not zt-opt %s -zt-optimizer="optimizer=adamw beta2=1" -split-input-file 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not zt-opt %s -zt-optimizer="grad-scale=0" -split-input-file 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not zt-opt %s -zt-optimizer="data-parallel=true bucket-bytes=-1" -split-input-file 2>&1 | FileCheck %s --check-prefix=BUCKET
// RUN: not zt-opt %s -zt-optimizer="clip-grad-norm=-1" -split-input-file 2>&1 | FileCheck %s --check-prefix=CLIP

// LR: zt-optimizer option 'lr' must be >= 0, got -1{{$}}
// NAME: zt-optimizer option 'optimizer' must be 'sgd', 'adamw' or 'none', got 'adam'
// MOM: zt-optimizer option 'momentum' must be >= 0 and < 1, got 1{{$}}
// NES: zt-optimizer option 'nesterov' needs momentum > 0
// EPS: zt-optimizer option 'eps' must be > 0, got 0{{$}}
// BETA: zt-optimizer option 'beta2' must be >= 0 and < 1, got 1{{$}}
// SCALE: zt-optimizer option 'grad-scale' must be > 0, got 0{{$}}
// BUCKET: zt-optimizer option 'bucket-bytes' must be >= 0, got -1{{$}}
// CLIP: zt-optimizer option 'clip-grad-norm' must be >= 0, got -1{{$}}

// A forward-only module has nothing to update.
// expected-error @+1 {{zt-optimizer found no training step: run zt-autodiff first}}
module {
  func.func @forward(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
    %l = zt.sum %w, dims = [0] : (tensor<4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A step whose gradients were already applied (zt-optimizer ran before).
// expected-error @+1 {{returns no parameter gradient to apply (zt-optimizer runs once, after zt-autodiff)}}
func.func @applied(%w: tensor<4xf32> {zt.init = #zt.init<zeros>, zt.name = "w", zt.role = #zt.role<parameter>})
    -> (tensor<f32> {zt.name = "loss"}, tensor<4xf32> {zt.name = "w", zt.tied = 0 : i64})
    attributes {zt.entry = "train_step"} {
  %l = zt.sum %w, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}

// -----

// The apply entry's name is taken.
// expected-error @+1 {{cannot add its apply entry: the module already has a symbol named 'micro_apply'}}
func.func @micro(%w: tensor<4xf32> {zt.init = #zt.init<zeros>, zt.name = "w", zt.role = #zt.role<parameter>},
                 %a: tensor<4xf32> {zt.init = #zt.init<zeros>, zt.name = "w.grad_acc", zt.role = #zt.role<accumulator>})
    -> (tensor<f32> {zt.name = "loss"}, tensor<4xf32> {zt.gradient_of = 0 : i64, zt.tied = 1 : i64})
    attributes {zt.entry = "microbatch"} {
  %l = zt.sum %w, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %s = zt.add %a, %w : tensor<4xf32>
  return %l, %s : tensor<f32>, tensor<4xf32>
}
func.func private @micro_apply()
