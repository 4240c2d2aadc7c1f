// zt-plan-memory writing results in place in the arena: a result takes the
// slot of an operand whose value dies at its op, when the two are the same
// size and the kernel reads each element before writing it (elementwise
// ops, scale, dropout, the losses' gradients). The loader's checks accept
// exactly these launches (an output equal to an input of such a kernel), and
// the independent checker finds no two live values sharing bytes.
// RUN: zt-opt %s -split-input-file -zt-plan-memory | FileCheck %s
// RUN: zt-opt %s -split-input-file -zt-plan-memory | %python %S/../tools/check_zplan.py - | FileCheck %s --check-prefix=CHECKER

// The chain of zt-plan-memory.mlir: %b dies at 2, so %c is computed over it;
// %a and %c both die at 3, so %d is computed over %a (the first operand
// that dies); %e over %d. Two slots instead of five, at the lower bound.
//   pos  value  slot
//   0    %a     A [0, 5)   (%a, then %d, then %e)
//   1    %b     B [1, 4)   (%b, then %c)
// CHECK-LABEL: zplan.entry @chain kind = train_step arena = 2048 lower_bound = 2048 no_reuse = 2048
// CHECK-NEXT: %[[X:.+]] = zplan.slot input offset = 0 size = 1024 name = "x"
// CHECK-NEXT: %[[A:.+]] = zplan.slot arena offset = {{[0-9]+}} size = 1024 live = [0, 6] name = "a"
// CHECK-NEXT: %[[B:.+]] = zplan.slot arena offset = {{[0-9]+}} size = 1024 live = [1, 4] name = "b"
// CHECK-NEXT: %[[F:.+]] = zplan.slot output
// CHECK-NEXT: zplan.launch "exp"(%[[X]]) -> (%[[A]])
// CHECK-NEXT: zplan.launch "exp"(%[[A]]) -> (%[[B]])
// CHECK-NEXT: zplan.launch "exp"(%[[B]]) -> (%[[B]])
// CHECK-NEXT: zplan.launch "add"(%[[A]], %[[B]]) -> (%[[A]])
// CHECK-NEXT: zplan.launch "exp"(%[[A]]) -> (%[[A]])
// CHECK-NEXT: zplan.launch "exp"(%[[A]]) -> (%[[F]])
// CHECKER: entry @chain: 2 arena slots, arena 2048, lower bound 2048, no reuse 2048: ok
func.func @chain(%x: tensor<256xf32> {zt.role = #zt.role<input>, zt.name = "x"})
    -> (tensor<256xf32> {zt.name = "out"}) attributes {zt.entry = "train_step"} {
  %a = zt.exp %x : tensor<256xf32> loc("a")
  %b = zt.exp %a : tensor<256xf32> loc("b")
  %c = zt.exp %b : tensor<256xf32> loc("c")
  %d = zt.add %a, %c : tensor<256xf32> loc("d")
  %e = zt.exp %d : tensor<256xf32> loc("e")
  %f = zt.exp %e : tensor<256xf32> loc("f")
  return %f : tensor<256xf32>
}

// -----

// Not in place: over an operand read later (%a at the softmax, read again
// by the mul), by a kernel the loader does not allow in place (softmax),
// over an operand of another size (the sums), or over an input (never
// written). The mul, where %a dies, writes over it.
// CHECK-LABEL: zplan.entry @kept
// CHECK: %[[A:.+]] = zplan.slot arena {{.*}} name = "a"
// CHECK: %[[B:.+]] = zplan.slot arena {{.*}} name = "b"
// CHECK: %[[S:.+]] = zplan.slot arena {{.*}} name = "s"
// CHECK: zplan.launch "exp"(%{{.+}}) -> (%[[A]])
// CHECK-NEXT: zplan.launch "softmax"(%[[A]]) -> (%[[B]])
// CHECK-NEXT: zplan.launch "mul"(%[[A]], %[[B]]) -> (%[[A]])
// CHECKER: entry @kept: {{[0-9]+}} arena slots, {{.*}}: ok
func.func @kept(%x: tensor<4x64xf32> {zt.role = #zt.role<input>, zt.name = "x"})
    -> (tensor<f32> {zt.name = "out"}) attributes {zt.entry = "train_step"} {
  %a = zt.exp %x : tensor<4x64xf32> loc("a")
  %b = zt.softmax %a, axis = 1 : tensor<4x64xf32> loc("b")
  %m = zt.mul %a, %b : tensor<4x64xf32> loc("m")
  %s = zt.sum %m, dims = [1] : (tensor<4x64xf32>) -> tensor<4xf32> loc("s")
  %l = zt.sum %s, dims = [0] : (tensor<4xf32>) -> tensor<f32> loc("l")
  return %l : tensor<f32>
}

// -----

// A kernel of several results: batch_norm_grad's input gradient over the
// result gradient %e, which dies there (the per-channel gradients have no
// operand of their size; its statistics, as many bytes as an input of
// [2, 3], would need that very shape).
// CHECK-LABEL: zplan.entry @batch_norm
// CHECK: %[[X:.+]] = zplan.slot input {{.*}} name = "x"
// CHECK: %[[E:.+]] = zplan.slot arena {{.*}} name = "e"
// CHECK: zplan.launch "batch_norm_grad"(%[[X]], %{{.+}}, %{{.+}}, %[[E]]) -> (%[[E]], %{{.+}}, %{{.+}})
// CHECKER: entry @batch_norm: {{[0-9]+}} arena slots, {{.*}}: ok
func.func @batch_norm(%x: tensor<4x3x2x2xf32> {zt.role = #zt.role<input>, zt.name = "x"},
                      %g: tensor<3xf32> {zt.role = #zt.role<input>, zt.name = "g"})
    -> (tensor<f32> {zt.name = "out"}) attributes {zt.entry = "train_step"} {
  %s = zt.batch_norm_stats %x : (tensor<4x3x2x2xf32>) -> tensor<2x3xf32> loc("s")
  %e = zt.exp %x : tensor<4x3x2x2xf32> loc("e")
  %r:3 = zt.batch_norm_grad %x, %s, %g, %e {epsilon = 1.0e-05 : f64} : (tensor<4x3x2x2xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<4x3x2x2xf32>) -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>) loc("dx")
  %a = zt.sum %r#0, dims = [0, 1, 2, 3] : (tensor<4x3x2x2xf32>) -> tensor<f32> loc("a")
  %b = zt.sum %r#1, dims = [0] : (tensor<3xf32>) -> tensor<f32> loc("b")
  %c = zt.add %a, %b : tensor<f32> loc("c")
  %d = zt.sum %r#2, dims = [0] : (tensor<3xf32>) -> tensor<f32> loc("d")
  %l = zt.add %c, %d : tensor<f32> loc("l")
  return %l : tensor<f32>
}
