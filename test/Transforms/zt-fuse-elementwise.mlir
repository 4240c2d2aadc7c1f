// zt-fuse-elementwise: a chain of float element ops whose values only the
// next op reads becomes one zt.fused; what is read twice, crosses the
// forward/backward boundary or would outlive its op stays apart.
// RUN: zt-opt %s -split-input-file -zt-fuse-elementwise | FileCheck %s
// The first function through zt-plan-memory (the others are no entries):
// RUN: zt-opt %s -split-input-file -zt-fuse-elementwise 2>&1 | sed '/^\/\/ -----/,$d' | zt-opt -zt-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: zt-opt %s -split-input-file -zt-fuse-elementwise 2>&1 | sed '/^\/\/ -----/,$d' | zt-opt -zt-plan-memory | %python %S/../tools/check_zplan.py - | FileCheck %s --check-prefix=CHECKER

// A bias add, GELU, a scale and a product: one program. The bias is a
// broadcast, its operand #1; in the plan it is a view read through strides.
// CHECK-LABEL: func.func @chain
// CHECK: %[[BB:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: %[[F:.+]] = zt.fused(%arg0, %[[BB]], %arg2) {args = array<i64: 0, 1, 3, 4, 5, 2>, numbers = array<f64: 5.000000e-01>, ops = ["add", "gelu", "scale", "mul"], outputs = array<i64: 6>, seeds = array<i64>}
// CHECK-NEXT: zt.sum %[[F]]
// CHECK-NOT: zt.gelu
// PLAN-LABEL: zplan.entry @chain
// PLAN: %[[BV:.+]] = zplan.broadcast_view %{{.+}} strides = [0, 1]
// PLAN-NEXT: zplan.launch "fused"(%{{.+}}, %[[BV]], %{{.+}}) -> (%{{.+}}) {args = array<i64: 0, 1, 3, 4, 5, 2>, numbers = array<f64: 5.000000e-01>, ops = ["add", "gelu", "scale", "mul"], outputs = array<i64: 6>, seeds = array<i64>}
// PLAN-NOT: zplan.launch "add"
// CHECKER: entry @chain: {{.*}}: ok
func.func @chain(%x: tensor<32x64xf32> {zt.role = #zt.role<input>, zt.name = "x"},
                 %b: tensor<64xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "b"},
                 %y: tensor<32x64xf32> {zt.role = #zt.role<input>, zt.name = "y"}) -> (tensor<f32> {zt.name = "loss"}) attributes {zt.entry = "train_step"} {
  %bb = zt.broadcast_in_dim %b, dims = [1] : (tensor<64xf32>) -> tensor<32x64xf32>
  %a = zt.add %x, %bb : tensor<32x64xf32>
  %g = zt.gelu %a : tensor<32x64xf32>
  %s = zt.scale %g, factor = 5.000000e-01 : tensor<32x64xf32>
  %m = zt.mul %s, %y : tensor<32x64xf32>
  %l = zt.sum %m, dims = [0, 1] : (tensor<32x64xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A value read before the chain's end stays apart (the program would
// compute it too late); one read after it is a further result. A row's
// numbers go in order (clamp's min, max).
// CHECK-LABEL: func.func @shared
// CHECK: %[[T:.+]] = zt.tanh %arg0
// CHECK-NEXT: %[[S:.+]] = zt.sum %[[T]]
// CHECK-NEXT: %[[F:.+]]:2 = zt.fused(%[[T]], %arg1) {args = array<i64: 0, 2, 1, 3, 1>, numbers = array<f64: -1.000000e+00, 2.000000e+00>, ops = ["clamp", "mul", "add"], outputs = array<i64: 2, 4>, seeds = array<i64>}
// CHECK-NEXT: return %[[F]]#1, %[[S]], %[[F]]#0
func.func @shared(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<f32>, tensor<8xf32>) {
  %t = zt.tanh %x : tensor<8xf32>
  %s = zt.sum %t, dims = [0] : (tensor<8xf32>) -> tensor<f32>
  %c = zt.clamp %t {min = -1.0 : f64, max = 2.0 : f64} : tensor<8xf32>
  %m = zt.mul %c, %y : tensor<8xf32>
  %r = zt.add %m, %y : tensor<8xf32>
  return %r, %s, %c : tensor<8xf32>, tensor<f32>, tensor<8xf32>
}

// -----

// The forward and the backward do not fuse together; each side does, and
// zt.backward_start counts the ops left in the forward. bf16 chains fuse.
// CHECK-LABEL: func.func @sides
// CHECK-SAME: zt.backward_start = 1
// CHECK: %[[A:.+]] = zt.fused(%arg0) {args = array<i64: 0, 1>, numbers = array<f64>, ops = ["neg", "exp"], outputs = array<i64: 2>, seeds = array<i64>} : (tensor<8xbf16>) -> tensor<8xbf16>
// CHECK-NEXT: %[[B:.+]] = zt.fused(%[[A]], %arg1) {args = array<i64: 0, 1, 2>, numbers = array<f64>, ops = ["mul", "neg"], outputs = array<i64: 3>, seeds = array<i64>}
// CHECK-NEXT: return %[[B]]
func.func @sides(%x: tensor<8xbf16>, %d: tensor<8xbf16>) -> tensor<8xbf16> attributes {zt.backward_start = 2 : i64} {
  %n = zt.neg %x : tensor<8xbf16>
  %e = zt.exp %n : tensor<8xbf16>
  %g = zt.mul %e, %d : tensor<8xbf16>
  %h = zt.neg %g : tensor<8xbf16>
  return %h : tensor<8xbf16>
}

// -----

// An operand that dies at its op is not kept alive across other ops: the
// exp runs between the tanh and the add, and the tanh's operand is read by
// nothing later, so the tanh stays apart. The sub's operands live on
// (arguments), so it joins across the exp.
// CHECK-LABEL: func.func @lifetimes
// CHECK: %[[P:.+]] = zt.matmul
// CHECK-NEXT: %[[T:.+]] = zt.tanh %[[P]]
// CHECK-NEXT: %[[E:.+]] = zt.exp %arg1
// CHECK-NEXT: %[[S:.+]] = zt.sum %[[E]]
// CHECK-NEXT: zt.fused(%arg1, %arg2, %[[T]]) {args = array<i64: 0, 1, 3, 2>, numbers = array<f64>, ops = ["sub", "add"], outputs = array<i64: 4>, seeds = array<i64>}
func.func @lifetimes(%w: tensor<4x4xf32>, %x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<f32>) {
  %p = zt.matmul %w, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %t = zt.tanh %p : tensor<4x4xf32>
  %d = zt.sub %x, %y : tensor<4x4xf32>
  %e = zt.exp %x : tensor<4x4xf32>
  %s = zt.sum %e, dims = [0, 1] : (tensor<4x4xf32>) -> tensor<f32>
  %r = zt.add %d, %t : tensor<4x4xf32>
  return %r, %s : tensor<4x4xf32>, tensor<f32>
}

// -----

// At most 8 operands: a sum of 10 arguments splits into two programs.
// CHECK-LABEL: func.func @wide
// CHECK: %[[F:.+]] = zt.fused(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7)
// CHECK-NEXT: zt.fused(%[[F]], %arg8, %arg9)
func.func @wide(%a0: tensor<4xf32>, %a1: tensor<4xf32>, %a2: tensor<4xf32>, %a3: tensor<4xf32>, %a4: tensor<4xf32>,
                %a5: tensor<4xf32>, %a6: tensor<4xf32>, %a7: tensor<4xf32>, %a8: tensor<4xf32>, %a9: tensor<4xf32>) -> tensor<4xf32> {
  %s1 = zt.add %a0, %a1 : tensor<4xf32>
  %s2 = zt.add %s1, %a2 : tensor<4xf32>
  %s3 = zt.add %s2, %a3 : tensor<4xf32>
  %s4 = zt.add %s3, %a4 : tensor<4xf32>
  %s5 = zt.add %s4, %a5 : tensor<4xf32>
  %s6 = zt.add %s5, %a6 : tensor<4xf32>
  %s7 = zt.add %s6, %a7 : tensor<4xf32>
  %s8 = zt.add %s7, %a8 : tensor<4xf32>
  %s9 = zt.add %s8, %a9 : tensor<4xf32>
  return %s9 : tensor<4xf32>
}

// -----

// Residual dropout: the bias add, the dropout and the residual add are one
// program; the dropout's seed goes in `seeds`, its step counter after the
// operands.
// CHECK-LABEL: func.func @residual_dropout
// CHECK: %[[BB:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: zt.fused(%arg0, %[[BB]], %arg2, %arg3) {args = array<i64: 0, 1, 3, 2, 4>, numbers = array<f64: 1.000000e-01>, ops = ["add", "dropout", "add"], outputs = array<i64: 5>, seeds = array<i64: 7>} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
func.func @residual_dropout(%h: tensor<4x8xf32>, %b: tensor<8xf32>, %x: tensor<4x8xf32>, %step: tensor<i64>) -> tensor<4x8xf32> {
  %bb = zt.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %a = zt.add %h, %bb : tensor<4x8xf32>
  %d = zt.dropout %a, %step, rate = 1.000000e-01, seed = 7 : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  %r = zt.add %x, %d : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
