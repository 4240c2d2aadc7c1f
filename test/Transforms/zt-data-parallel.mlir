// zt-optimizer with data-parallel: the gradients are averaged over the ranks
// before the updates, in buckets filled in the order the backward produces
// them (last layer first), each bucket one zt.all_reduce {mean} right after
// its last gradient. Its updates wait until the next bucket's all_reduce is
// placed, so a bucket's reduction runs while the next bucket is computed.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.1 data-parallel=true bucket-bytes=2000" | FileCheck %s
// CHECK-LABEL: func.func @mlp_loss
// CHECK: %[[DB3:.+]] = zt.sum %{{.+}}, dims = [0] : (tensor<32x10xf32>) -> tensor<10xf32>
// CHECK: %[[DW3:.+]] = zt.matmul %{{.+}} {transpose_lhs} : (tensor<32x128xf32>, tensor<32x10xf32>) -> tensor<128x10xf32>
// CHECK-NEXT: %[[R3:.+]]:2 = zt.all_reduce %[[DB3]], %[[DW3]] {mean} : (tensor<10xf32>, tensor<128x10xf32>) -> (tensor<10xf32>, tensor<128x10xf32>)
// CHECK-NOT: zt.sgd
// CHECK: %[[R2:.+]]:2 = zt.all_reduce {{.+}} : (tensor<128xf32>, tensor<256x128xf32>)
// CHECK-NEXT: zt.sgd %{{.+}}, %[[R3]]#0
// CHECK-NEXT: zt.sgd %{{.+}}, %[[R3]]#1
// CHECK-NOT: zt.sgd
// CHECK: %[[R1:.+]]:2 = zt.all_reduce {{.+}} : (tensor<256xf32>, tensor<784x256xf32>)
// CHECK-NEXT: zt.sgd %{{.+}}, %[[R2]]#0
// CHECK-NEXT: zt.sgd %{{.+}}, %[[R2]]#1
// CHECK-NEXT: zt.sgd %{{.+}}, %[[R1]]#0
// CHECK-NEXT: zt.sgd %{{.+}}, %[[R1]]#1
// CHECK-NOT: zt.all_reduce
// CHECK: return

// Without bucket-bytes, a bucket is a sixteenth of the gradients, at least
// 1 MiB and at most 25 MiB. The MLP's 0.9 MiB of gradients: one bucket.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.1 data-parallel=true" | FileCheck %s --check-prefix=ONE
// ONE-COUNT-1: zt.all_reduce
// ONE-NOT: zt.all_reduce

// 32 gradients of 1 MiB: buckets of 2 MiB, sixteen of them.
// RUN: %python %S/Inputs/matmul_chain.py 32 512 | zt-opt -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.1 data-parallel=true" | FileCheck %s --check-prefix=SIXTEENTH
// SIXTEENTH-COUNT-16: zt.all_reduce {{.+}} {mean} : (tensor<512x512xf32>, tensor<512x512xf32>) ->
// SIXTEENTH-NOT: zt.all_reduce
// An explicit size wins: 25 MiB, then the 7 left.
// RUN: %python %S/Inputs/matmul_chain.py 32 512 | zt-opt -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.1 data-parallel=true bucket-bytes=26214400" | FileCheck %s --check-prefix=EXPLICIT
// EXPLICIT-COUNT-2: zt.all_reduce
// EXPLICIT-NOT: zt.all_reduce
// 48 of 16 MiB: a sixteenth would be 48 MiB, so 25 MiB (two per bucket).
// RUN: %python %S/Inputs/matmul_chain.py 48 2048 | zt-opt -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.1 data-parallel=true" | FileCheck %s --check-prefix=CAP
// CAP-COUNT-24: zt.all_reduce {{.+}} {mean} : (tensor<2048x2048xf32>, tensor<2048x2048xf32>) ->
// CAP-NOT: zt.all_reduce
// 8 of 256 KiB: a sixteenth would be 128 KiB, so 1 MiB (four per bucket).
// RUN: %python %S/Inputs/matmul_chain.py 8 256 | zt-opt -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.1 data-parallel=true" | FileCheck %s --check-prefix=FLOOR
// FLOOR-COUNT-2: zt.all_reduce {{.+}} {mean} : (tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>) ->
// FLOOR-NOT: zt.all_reduce

// A bucket is one arena buffer whose parts are its gradients, side by side:
// each gradient is computed in its part (the reduction is in place), and
// the bucket lives from its first part's write to its last part's read.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.1 data-parallel=true bucket-bytes=2000" -zt-print-liveness | FileCheck %s --check-prefix=LIVE
// LIVE: #[[B:[0-9]+]] arena-part [14, 24) in #[[BUCKET:[0-9]+]] at 0 40 bytes: zt.sum at 14
// LIVE: #[[W:[0-9]+]] arena-part [16, 25) in #[[BUCKET]] at 40 5120 bytes: zt.matmul at 16
// LIVE: #[[BUCKET]] arena [14, 25) bucket of #[[B]] #[[W]] 5160 bytes
// LIVE: 17 zt.all_reduce (#[[B]], #[[W]]) -> (#[[B]], #[[W]])

// Accumulation: the apply entry averages the accumulators, in buckets,
// before its updates; the microbatch entry communicates nothing.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff="accumulate=true" -zt-optimizer="optimizer=sgd lr=0.1 data-parallel=true bucket-bytes=300000" | FileCheck %s --check-prefix=ACC
// ACC-LABEL: func.func @mlp_loss(
// ACC-NOT: zt.all_reduce
// ACC-LABEL: func.func @mlp_loss_apply(
// ACC: zt.all_reduce {{.+}} {mean} : (tensor<784x256xf32>)
// ACC-NEXT: zt.all_reduce {{.+}} {mean} : (tensor<256xf32>, tensor<256x128xf32>, tensor<128xf32>, tensor<128x10xf32>, tensor<10xf32>)
// ACC: zt.sgd

// ZeRO-1: per bucket, the gradients packed side by side (zero padded to 2
// equal shards) and reduce-scattered, this rank's shard of the flattened
// parameters (read where they are: zt.shard of the parameters themselves)
// updated with state of one shard's size, and the shards all-gathered back
// into the parameters (sliced straight into them); the module
// records which parameters each state tensor covers. The update waits for
// the next bucket's reduce_scatter, the slices for the next all_gather.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=adamw lr=0.1 data-parallel=true bucket-bytes=2000 shard-optimizer-state=true world-size=2" | FileCheck %s --check-prefix=ZERO
// ZERO: module attributes {zt.sharded_states = [{name = "zero.0.exp_avg", offsets = array<i64: 0, 10>, params = ["b3", "w3"], ranks = 2 : i64, suffix = ".exp_avg"}, {name = "zero.0.exp_avg_sq", offsets = array<i64: 0, 10>, params = ["b3", "w3"], ranks = 2 : i64, suffix = ".exp_avg_sq"}
// ZERO-SAME: {name = "zero.2.exp_avg"
// ZERO: %{{.+}}: tensor<645xf32> {zt.init = #zt.init<zeros>, zt.name = "zero.0.exp_avg", zt.role = #zt.role<optimizer_state>}
// ZERO-NOT: zt.concat
// ZERO: %[[PACK:.+]]:2 = zt.pack %{{.+}}, %{{.+}} : (tensor<10xf32>, tensor<128x10xf32>) -> (tensor<10xf32>, tensor<128x10xf32>)
// ZERO-NEXT: %[[G:.+]] = zt.reduce_scatter %[[PACK]]#0, %[[PACK]]#1 {mean, ranks = 2 : i64} : (tensor<10xf32>, tensor<128x10xf32>) -> tensor<645xf32>
// ZERO-NOT: zt.shard
// ZERO: zt.reduce_scatter %{{.+}}, %{{.+}} {mean, ranks = 2 : i64} : (tensor<128xf32>, tensor<256x128xf32>) -> tensor<16448xf32>
// ZERO: %[[P:.+]] = zt.shard %{{.+}}, %{{.+}} {ranks = 2 : i64} : (tensor<10xf32>, tensor<128x10xf32>) -> tensor<645xf32>
// ZERO-NEXT: %[[NEW:.+]], %{{.+}}, %{{.+}} = zt.adamw %[[P]], %[[G]]
// ZERO-NEXT: %[[ALL:.+]] = zt.all_gather %[[NEW]] {ranks = 2 : i64} : (tensor<645xf32>) -> tensor<1290xf32>
// ZERO-NOT: zt.slice
// ZERO: zt.all_gather %{{.+}} {ranks = 2 : i64} : (tensor<16448xf32>) -> tensor<32896xf32>
// ZERO-NEXT: zt.slice %[[ALL]] [0:10]

// A gradient larger than a bucket is a bucket of its own, reduce-scattered
// as it is: its shape is read flat.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=adamw lr=0.1 data-parallel=true bucket-bytes=1 shard-optimizer-state=true world-size=2" | FileCheck %s --check-prefix=ALONE
// ALONE: %[[W3:.+]] = zt.pack %{{.+}} : (tensor<128x10xf32>) -> tensor<128x10xf32>
// ALONE-NEXT: zt.reduce_scatter %[[W3]] {mean, ranks = 2 : i64} : (tensor<128x10xf32>) -> tensor<640xf32>
// ALONE: zt.reduce_scatter %{{.+}} {mean, ranks = 2 : i64} : (tensor<784x256xf32>) -> tensor<100352xf32>

// ZeRO-1's gathered slices are written straight into the parameters (a
// reshape of a slice owns its buffer): no parameter is copied at the return.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=adamw lr=0.1 data-parallel=true bucket-bytes=2000 shard-optimizer-state=true world-size=2" -zt-print-liveness | FileCheck %s --check-prefix=ZLIVE
// ZLIVE-LABEL: results:
// ZLIVE-NOT: copied from
// ZLIVE: "w3" in #6
// ZLIVE-NOT: copied from
// ZLIVE: "w1" in #2
// ZLIVE-NOT: copied from
// ZLIVE: module
