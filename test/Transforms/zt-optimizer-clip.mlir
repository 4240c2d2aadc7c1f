// zt-optimizer with clip-grad-norm: the gradients are clipped by their
// global norm (torch.nn.utils.clip_grad_norm_). A chain of zt.sum_squares
// sums every gradient's squares, and every update, placed after it, reads
// the sum: no clipped copy of a gradient is made. The norm before clipping
// (what clip_grad_norm_ returns) is the step's `grad_norm` output.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=adamw lr=0.1 clip-grad-norm=1.0" | FileCheck %s
// CHECK-LABEL: func.func @mlp_loss
// CHECK-SAME: -> (tensor<f32> {zt.name = "loss"}, tensor<f32> {zt.name = "grad_norm"}, 
// CHECK-NOT: zt.adamw
// CHECK: %[[S0:.+]] = zt.sum_squares %{{.+}} : (tensor<784x256xf32>) -> tensor<f32>
// CHECK-NEXT: %[[S1:.+]] = zt.sum_squares %{{.+}}, %[[S0]] : (tensor<256xf32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT: %[[S2:.+]] = zt.sum_squares %{{.+}}, %[[S1]]
// CHECK-NEXT: %[[S3:.+]] = zt.sum_squares %{{.+}}, %[[S2]]
// CHECK-NEXT: %[[S4:.+]] = zt.sum_squares %{{.+}}, %[[S3]]
// CHECK-NEXT: %[[S:.+]] = zt.sum_squares %{{.+}}, %[[S4]] : (tensor<10xf32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT: %[[NORM:.+]] = zt.sqrt %[[S]] : tensor<f32>
// CHECK-COUNT-6: zt.adamw {{.+}} clip %[[S]] {lr = 1.000000e-01 : f64, max_grad_norm = 1.000000e+00 : f64, weight_decay = 0.000000e+00 : f64}
// CHECK-NOT: zt.sum_squares
// CHECK: return %{{.+}}, %[[NORM]],

// Data parallel: the norm of the averaged gradients, after the last bucket.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.1 clip-grad-norm=1.0 data-parallel=true bucket-bytes=2000" | FileCheck %s --check-prefix=DP
// DP-COUNT-3: zt.all_reduce {{.+}} {mean}
// DP-NOT: zt.sgd
// DP-COUNT-6: zt.sum_squares
// DP-COUNT-6: zt.sgd {{.+}} clip
// DP-NOT: zt.all_reduce

// ZeRO-1: each rank sums the squares of its shards as they are reduced, one
// zt.all_reduce (a sum, not a mean) of that number gives the norm, and only
// then the buckets' steps and all_gathers. grad-scale scales the sum by its
// square rather than keeping a scaled copy of every gradient.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=adamw lr=0.1 clip-grad-norm=1.0 grad-scale=0.5 data-parallel=true bucket-bytes=2000 shard-optimizer-state=true world-size=2" | FileCheck %s --check-prefix=ZERO
// ZERO: %[[RS0:.+]] = zt.reduce_scatter {{.+}} -> tensor<645xf32>
// ZERO-NEXT: %[[P0:.+]] = zt.sum_squares %[[RS0]] : (tensor<645xf32>) -> tensor<f32>
// ZERO-NOT: zt.adamw
// ZERO: %[[RS1:.+]] = zt.reduce_scatter {{.+}} -> tensor<16448xf32>
// ZERO-NEXT: %[[P1:.+]] = zt.sum_squares %[[RS1]], %[[P0]]
// ZERO-NOT: zt.adamw
// ZERO: %[[RS2:.+]] = zt.reduce_scatter {{.+}} -> tensor<100480xf32>
// ZERO-NEXT: %[[P2:.+]] = zt.sum_squares %[[RS2]], %[[P1]]
// ZERO-NEXT: %[[SUM:.+]] = zt.all_reduce %[[P2]] : (tensor<f32>) -> tensor<f32>
// ZERO-NEXT: %[[S:.+]] = zt.scale %[[SUM]], factor = 2.500000e-01 : tensor<f32>
// ZERO-NEXT: zt.sqrt %[[S]] : tensor<f32>
// ZERO: %[[G0:.+]] = zt.scale %[[RS0]], factor = 5.000000e-01
// ZERO-NEXT: zt.adamw %{{.+}}, %[[G0]], {{.+}} clip %[[S]]
// ZERO-NEXT: zt.all_gather
// ZERO: zt.adamw {{.+}} clip %[[S]]
// ZERO: zt.adamw {{.+}} clip %[[S]]
// ZERO-NOT: zt.adamw

// Accumulation: the apply entry clips the (scaled) accumulators.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff="accumulate=true" -zt-optimizer="optimizer=sgd lr=0.1 grad-scale=0.5 clip-grad-norm=1.0" | FileCheck %s --check-prefix=ACC
// ACC-LABEL: func.func @mlp_loss(
// ACC-NOT: zt.sum_squares
// ACC-LABEL: func.func @mlp_loss_apply(
// ACC-SAME: -> (tensor<f32> {zt.name = "grad_norm"}, 
// ACC-COUNT-6: zt.sum_squares
// ACC-NEXT: %[[S:.+]] = zt.scale %{{.+}}, factor = 2.500000e-01 : tensor<f32>
// ACC-COUNT-6: zt.sgd {{.+}} clip %[[S]]

// Its plan: the sums and the updates are the step's "update" phase.
// RUN: zcc %examples/mlp.mlir --optimizer adamw --clip-grad-norm 1 --emit-ir=- -o %t.zplan | FileCheck %s --check-prefix=PLAN
// PLAN: zplan.launch "sum_squares"({{.+}}) {} phase = update
// PLAN: zplan.launch "adamw"({{.+}}) {{{.+}}max_grad_norm = 1.000000e+00 : f64{{.+}}} phase = update

// A step that already returns a `grad_norm` is refused.
// RUN: not zt-opt %S/Inputs/returns-grad-norm.mlir -zt-optimizer="optimizer=sgd clip-grad-norm=1.0" 2>&1 | FileCheck %s --check-prefix=CLASH
// CLASH: error: 'func.func' op returns a result named 'grad_norm', the output clipping adds

// zrun prints it with the loss.
// RUN: zcc %examples/gpt_block.mlir --optimizer adamw --lr 0.001 --clip-grad-norm 0.5 -o %t.clip.zplan
// RUN: zrun %t.clip.zplan --steps 2 | FileCheck %s --check-prefix=PRINTED
// PRINTED: step 1 loss {{[0-9.]+}} grad_norm {{[0-9.]+}}
// PRINTED-NEXT: step 2 loss {{[0-9.]+}} grad_norm {{[0-9.]+}}
