// zt-remat: forward values live at the peak only for the backward are
// computed again before their first backward use until the peak of live
// arena bytes fits the budget.
// RUN: zt-opt %s -zt-autodiff -zt-optimizer -zt-remat=memory-budget=1000000 | FileCheck %s --check-prefix=FITS
// RUN: zt-opt %s -zt-autodiff -zt-optimizer -zt-remat=memory-budget=1000000 -zt-print-liveness | FileCheck %s --check-prefix=FITS-PEAK
// RUN: zt-opt %s -zt-autodiff -zt-optimizer -zt-remat=memory-budget=70000 | FileCheck %s
// RUN: zt-opt %s -zt-autodiff -zt-optimizer -zt-remat=memory-budget=70000 -zt-print-liveness | FileCheck %s --check-prefix=PEAK
// RUN: zt-opt %s -zt-autodiff -zt-optimizer -zt-remat=memory-budget=10000 | FileCheck %s --check-prefix=EXHAUSTED
// RUN: zt-opt %s -zt-autodiff -zt-optimizer -zt-remat="memory-budget=70000 remat-report=true" -o /dev/null | FileCheck %s --check-prefix=REPORT
// REPORT: zt-remat @mlp: peak 81920 -> 65536 live arena bytes, budget 70000; 2 ops copied, 5.284e+05 FLOPs
// RUN: zt-opt %s -zt-autodiff -zt-optimizer -zt-remat="memory-budget=70000 remat-problem=%t.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROBLEM < %t.json

// The recompute problem (bench/memory/remat_bound.py bounds it): the five
// forward ops, each with its FLOPs and the ops its copy needs (a tanh, its
// matmul: the matmul's result is written over in place); one position over
// the budget by 11920 bytes, which only the first tanh's saved 16 KiB can
// free (the second tanh's is read right at the start of the backward);
// zt-remat's choice, the first matmul and tanh.
// PROBLEM: "alignment": 256,
// PROBLEM: "budget": 70000,
// PROBLEM: "flops": 524288,
// PROBLEM-NEXT: "loc": "{{.*}}zt-remat.mlir:[[#MATMUL:]]:9",
// PROBLEM-NEXT: "needs": [],
// PROBLEM-NEXT: "op": "zt.matmul"
// PROBLEM: "flops": 4096,
// PROBLEM-NEXT: "loc": "{{.*}}zt-remat.mlir:[[#MATMUL+1]]:9",
// PROBLEM-NEXT: "needs": [
// PROBLEM-NEXT: 0
// PROBLEM-NEXT: ],
// PROBLEM-NEXT: "op": "zt.tanh"
// PROBLEM: "peak": 81920,
// PROBLEM-NEXT: "reachable": true,
// PROBLEM-NEXT: "rows": [
// PROBLEM-NEXT: {
// PROBLEM-NEXT: "cover": [
// PROBLEM-NEXT: [
// PROBLEM-NEXT: 1,
// PROBLEM-NEXT: 16384
// PROBLEM-NEXT: ]
// PROBLEM-NEXT: ],
// PROBLEM-NEXT: "deficit": 11920,
// PROBLEM: "zcc": {
// PROBLEM-NEXT: "exhausted": false,
// PROBLEM-NEXT: "flops": 528384,
// PROBLEM-NEXT: "ops": [
// PROBLEM-NEXT: 0,
// PROBLEM-NEXT: 1
// PROBLEM-NEXT: ],
// PROBLEM-NEXT: "peak": 65536
// PROBLEM: "format": "zcc.remat-problem/v1"

// Above the peak (81920 bytes: five 16 KiB values at the start of the
// backward), nothing is recomputed.
// FITS-NOT: zt.recompute
// FITS-PEAK: peak 81920 live arena bytes

// Below it: the first layer's tanh output, saved for w2's gradient and for
// its own tanh_grad, is the value that frees the most per FLOP; its operand
// (the first matmul's result, written over by the tanh in place) is gone, so
// both are computed again where w2's gradient needs them, from x and w1.
// CHECK-LABEL: func.func @mlp
// CHECK: %[[H1:.+]] = zt.matmul %arg0, %arg2 :
// CHECK-NEXT: %[[A1:.+]] = zt.tanh %[[H1]] :
// CHECK: zt.tanh_grad
// CHECK: %[[H1C:.+]] = zt.matmul %arg0, %arg2 {zt.recompute}
// CHECK-NEXT: %[[A1C:.+]] = zt.tanh %[[H1C]] {zt.recompute}
// CHECK-NEXT: zt.matmul %[[A1C]], %{{.+}} {transpose_lhs}
// CHECK: zt.tanh_grad %[[A1C]]
// CHECK-NOT: zt.recompute
// CHECK: return
// PEAK: peak 65536 live arena bytes

// Far below: nothing else can be recomputed (the rest is gradients and the
// loss's own inputs); the module says so and zcc reports the smallest
// arena reached.
// EXHAUSTED: module attributes {zt.remat_exhausted}
func.func @mlp(%x: tensor<64x64xf32> {zt.name = "x", zt.role = #zt.role<input>},
               %t: tensor<64x64xf32> {zt.name = "t", zt.role = #zt.role<label>},
               %w1: tensor<64x64xf32> {zt.name = "w1", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.1)>},
               %w2: tensor<64x64xf32> {zt.name = "w2", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.1)>},
               %w3: tensor<64x64xf32> {zt.name = "w3", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.1)>}) -> tensor<f32> {
  %h1 = zt.matmul %x, %w1 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %a1 = zt.tanh %h1 : tensor<64x64xf32>
  %h2 = zt.matmul %a1, %w2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %a2 = zt.tanh %h2 : tensor<64x64xf32>
  %y = zt.matmul %a2, %w3 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %l = zt.mse %y, %t : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
