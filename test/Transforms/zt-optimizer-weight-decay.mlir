// zt-optimizer's parameter groups: weight decay only on parameters of
// weight-decay-min-rank or more dimensions (nanoGPT's configure_optimizers),
// and none on those no-weight-decay names (names or patterns).
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=adamw lr=0.1 weight-decay=0.1 weight-decay-min-rank=2" | FileCheck %s
// CHECK-DAG: zt.adamw {{.+}} {lr = 1.000000e-01 : f64, weight_decay = 0.000000e+00 : f64} : (tensor<10xf32>,
// CHECK-DAG: zt.adamw {{.+}} {lr = 1.000000e-01 : f64, weight_decay = 0.000000e+00 : f64} : (tensor<128xf32>,
// CHECK-DAG: zt.adamw {{.+}} {lr = 1.000000e-01 : f64, weight_decay = 0.000000e+00 : f64} : (tensor<256xf32>,
// CHECK-DAG: zt.adamw {{.+}} {lr = 1.000000e-01 : f64, weight_decay = 1.000000e-01 : f64} : (tensor<128x10xf32>,
// CHECK-DAG: zt.adamw {{.+}} {lr = 1.000000e-01 : f64, weight_decay = 1.000000e-01 : f64} : (tensor<256x128xf32>,
// CHECK-DAG: zt.adamw {{.+}} {lr = 1.000000e-01 : f64, weight_decay = 1.000000e-01 : f64} : (tensor<784x256xf32>,

// By name: a pattern (b1, b2, b3) and an exact name (w3); SGD's L2 term too.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.1 weight-decay=0.1 no-weight-decay=b*,w3" | FileCheck %s --check-prefix=NAMES
// NAMES-DAG: zt.sgd {{.+}} {lr = 1.000000e-01 : f64} : (tensor<10xf32>,
// NAMES-DAG: zt.sgd {{.+}} {lr = 1.000000e-01 : f64} : (tensor<128xf32>,
// NAMES-DAG: zt.sgd {{.+}} {lr = 1.000000e-01 : f64} : (tensor<256xf32>,
// NAMES-DAG: zt.sgd {{.+}} {lr = 1.000000e-01 : f64} : (tensor<128x10xf32>,
// NAMES-DAG: zt.sgd {{.+}} {lr = 1.000000e-01 : f64, weight_decay = 1.000000e-01 : f64} : (tensor<256x128xf32>,
// NAMES-DAG: zt.sgd {{.+}} {lr = 1.000000e-01 : f64, weight_decay = 1.000000e-01 : f64} : (tensor<784x256xf32>,

// ZeRO-1: a shard takes one step, so the two groups never share a bucket:
// the biases (10 + 128 + 256 = 394 elements, 197 a rank) in one bucket of
// their own, after the weights' buckets, without decay.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=adamw lr=0.1 weight-decay=0.1 weight-decay-min-rank=2 data-parallel=true bucket-bytes=2000 shard-optimizer-state=true world-size=2" | FileCheck %s --check-prefix=ZERO
// ZERO: zt.reduce_scatter {{.+}} -> tensor<640xf32>
// ZERO: zt.reduce_scatter {{.+}} -> tensor<16384xf32>
// ZERO: zt.reduce_scatter {{.+}} -> tensor<100352xf32>
// ZERO: zt.reduce_scatter {{.+}} -> tensor<197xf32>
// ZERO-NOT: zt.reduce_scatter
// ZERO: zt.adamw {{.+}} weight_decay = 0.000000e+00 : f64} : (tensor<197xf32>,
// ZERO-NOT: zt.adamw

// A name that matches no parameter is a typo (a bad pattern: zcc.test).
// RUN: not zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=adamw weight-decay=0.1 no-weight-decay=bias" 2>&1 | FileCheck %s --check-prefix=UNUSED
// UNUSED: error: zt-optimizer option 'no-weight-decay': 'bias' matches no parameter
// RUN: not zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="weight-decay-min-rank=-1" 2>&1 | FileCheck %s --check-prefix=RANK
// RANK: zt-optimizer option 'weight-decay-min-rank' must be >= 0
