// zt-autodiff's recomputation: a forward value the backward reads is
// computed again just before its first backward use when its op is cheap
// and its operands are kept for the backward anyway, so it dies in the
// forward instead of living across the forward/backward boundary.
// RUN: zt-opt %s -split-input-file -zt-autodiff | FileCheck %s
// RUN: zt-opt %s -split-input-file -zt-autodiff=recompute=false | FileCheck %s --check-prefix=KEPT

// GELU between two matmuls (a transformer MLP): gelu_erf_grad keeps the
// GELU's input, so its output, which the second matmul's weight gradient
// reads, is recomputed from it there; the forward GELU's only use is then
// the forward matmul. The layer_norm's output likewise (its gradient keeps
// its input).
// CHECK-LABEL: func.func @mlp
// CHECK: %[[LN:.+]] = zt.layer_norm %arg0
// CHECK-NEXT: %[[H:.+]] = zt.matmul %[[LN]], %arg3
// CHECK-NEXT: %[[G:.+]] = zt.gelu_erf %[[H]]
// CHECK-NEXT: %[[Y:.+]] = zt.matmul %[[G]], %arg4
// CHECK: %[[G2:.+]] = zt.gelu_erf %[[H]]
// CHECK-NEXT: zt.matmul %[[G2]], %{{.+}} {transpose_lhs}
// CHECK: zt.gelu_erf_grad %[[H]]
// CHECK: %[[LN2:.+]] = zt.layer_norm %arg0
// CHECK-NEXT: zt.matmul %[[LN2]], %{{.+}} {transpose_lhs}
// CHECK: zt.layer_norm_grad %arg0
// KEPT-LABEL: func.func @mlp
// KEPT-COUNT-1: zt.gelu_erf %
// KEPT-NOT: zt.gelu_erf %
// KEPT: return
func.func @mlp(%x: tensor<8x16xf32> {zt.role = #zt.role<input>},
               %g: tensor<16xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>},
               %b: tensor<16xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
               %w1: tensor<16x32xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
               %w2: tensor<32x16xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %ln = zt.layer_norm %x, %g, %b, eps = 1.0e-5 : (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %h = zt.matmul %ln, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = zt.gelu_erf %h : tensor<8x32xf32>
  %y = zt.matmul %a, %w2 : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %l = zt.sum %y, dims = [0, 1] : (tensor<8x16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A view of a copy: the attention output's transpose and reshape, read by
// the projection's weight gradient, are recomputed from the attention output
// its gradient keeps.
// CHECK-LABEL: func.func @attention_output
// CHECK: %[[Y:.+]], %[[LSE:.+]] = zt.attention
// CHECK: %[[T:.+]] = zt.transpose %[[Y]]
// CHECK-NEXT: %[[M:.+]] = zt.reshape %[[T]]
// CHECK-NEXT: zt.matmul %[[M]], %arg3
// CHECK: %[[T2:.+]] = zt.transpose %[[Y]]
// CHECK-NEXT: %[[M2:.+]] = zt.reshape %[[T2]]
// CHECK-NEXT: %[[F:.+]] = zt.reshape %[[M2]]
// CHECK: zt.matmul %[[F]], %{{.+}} {transpose_lhs}
// CHECK: zt.attention_grad %arg0, %arg1, %arg2, %[[Y]], %[[LSE]]
func.func @attention_output(%q: tensor<2x3x4x8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                            %k: tensor<2x3x4x8xf32> {zt.role = #zt.role<input>},
                            %v: tensor<2x3x4x8xf32> {zt.role = #zt.role<input>},
                            %w: tensor<24x5xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %y, %lse = zt.attention %q, %k, %v, scale = 0.35 causal : (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) -> (tensor<2x3x4x8xf32>, tensor<2x3x4xf32>)
  %t = zt.transpose %y, perm = [0, 2, 1, 3] : (tensor<2x3x4x8xf32>) -> tensor<2x4x3x8xf32>
  %m = zt.reshape %t : (tensor<2x4x3x8xf32>) -> tensor<2x4x24xf32>
  %o = zt.matmul %m, %w : (tensor<2x4x24xf32>, tensor<24x5xf32>) -> tensor<2x4x5xf32>
  %l = zt.sum %o, dims = [0, 1, 2] : (tensor<2x4x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Not recomputed: relu keeps its result for its own gradient (its input
// dies), so there is nothing to recompute it from; and a value whose first
// backward use comes right after the forward (exp before the loss) gains
// nothing.
// CHECK-LABEL: func.func @kept
// CHECK: zt.relu %
// CHECK: zt.exp %
// CHECK-NOT: zt.relu %
// CHECK-NOT: zt.exp %
// CHECK: return
func.func @kept(%x: tensor<8x16xf32> {zt.role = #zt.role<input>},
                %labels: tensor<8xi32> {zt.role = #zt.role<label>},
                %w1: tensor<16x16xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                %w2: tensor<16x16xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %h = zt.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %r = zt.relu %h : tensor<8x16xf32>
  %h2 = zt.matmul %r, %w2 : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %e = zt.exp %h2 : tensor<8x16xf32>
  %l = zt.softmax_cross_entropy %e, %labels : (tensor<8x16xf32>, tensor<8xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
