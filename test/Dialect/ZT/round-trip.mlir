// Every zt op prints in a form that parses back to the same op, in both the
// custom and the generic syntax and through bytecode.
// RUN: zt-opt %s | zt-opt | FileCheck %s
// RUN: zt-opt %s -mlir-print-op-generic | zt-opt | FileCheck %s
// RUN: zt-opt %s -emit-bytecode | zt-opt | FileCheck %s

// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[A:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<4x8xf32>)
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[ADD:.+]] = zt.add %[[A]], %[[B]] : tensor<4x8xf32>
  %0 = zt.add %a, %b : tensor<4x8xf32>
  // CHECK: %[[SUB:.+]] = zt.sub %[[ADD]], %[[B]] : tensor<4x8xf32>
  %1 = zt.sub %0, %b : tensor<4x8xf32>
  // CHECK: %[[MUL:.+]] = zt.mul %[[SUB]], %[[A]] : tensor<4x8xf32>
  %2 = zt.mul %1, %a : tensor<4x8xf32>
  // CHECK: %[[DIV:.+]] = zt.div %[[MUL]], %[[B]] : tensor<4x8xf32>
  %3 = zt.div %2, %b : tensor<4x8xf32>
  // CHECK: %[[NEG:.+]] = zt.neg %[[DIV]] : tensor<4x8xf32>
  %4 = zt.neg %3 : tensor<4x8xf32>
  // CHECK: %[[EXP:.+]] = zt.exp %[[NEG]] : tensor<4x8xf32>
  %5 = zt.exp %4 : tensor<4x8xf32>
  // CHECK: %[[LOG:.+]] = zt.log %[[EXP]] : tensor<4x8xf32>
  %6 = zt.log %5 : tensor<4x8xf32>
  // CHECK: %[[TANH:.+]] = zt.tanh %[[LOG]] : tensor<4x8xf32>
  %7 = zt.tanh %6 : tensor<4x8xf32>
  // CHECK: %[[SIG:.+]] = zt.sigmoid %[[TANH]] : tensor<4x8xf32>
  %8 = zt.sigmoid %7 : tensor<4x8xf32>
  // CHECK: %[[RELU:.+]] = zt.relu %[[SIG]] : tensor<4x8xf32>
  %9 = zt.relu %8 : tensor<4x8xf32>
  // CHECK: %[[GELU:.+]] = zt.gelu %[[RELU]] : tensor<4x8xf32>
  %10 = zt.gelu %9 : tensor<4x8xf32>
  // CHECK: zt.gelu_erf %[[GELU]] : tensor<4x8xf32>
  %gerf = zt.gelu_erf %10 : tensor<4x8xf32>
  // CHECK: %[[SILU:.+]] = zt.silu %[[GELU]] : tensor<4x8xf32>
  %11 = zt.silu %10 : tensor<4x8xf32>
  // CHECK: %[[SQRT:.+]] = zt.sqrt %[[SILU]] : tensor<4x8xf32>
  %12 = zt.sqrt %11 : tensor<4x8xf32>
  // CHECK: %[[RSQRT:.+]] = zt.rsqrt %[[SQRT]] : tensor<4x8xf32>
  %13 = zt.rsqrt %12 : tensor<4x8xf32>
  // CHECK: return %[[RSQRT]]
  return %13 : tensor<4x8xf32>
}

// bf16 and f16 are admitted by the type rules.
// CHECK-LABEL: func.func @low_precision
func.func @low_precision(%a: tensor<8xbf16>, %b: tensor<8xf16>) -> (tensor<8xbf16>, tensor<8xf16>) {
  // CHECK: zt.add %{{.+}}, %{{.+}} : tensor<8xbf16>
  %0 = zt.add %a, %a : tensor<8xbf16>
  // CHECK: zt.exp %{{.+}} : tensor<8xf16>
  %1 = zt.exp %b : tensor<8xf16>
  return %0, %1 : tensor<8xbf16>, tensor<8xf16>
}

// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<f32>, tensor<2x2xf32>, tensor<8x8xf32>) {
  // CHECK: zt.constant dense<1.250000e-01> : tensor<f32>
  %0 = zt.constant dense<0.125> : tensor<f32>
  // CHECK: zt.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
  %1 = zt.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  // CHECK: zt.causal_mask : tensor<8x8xf32>
  %2 = zt.causal_mask : tensor<8x8xf32>
  return %0, %1, %2 : tensor<f32>, tensor<2x2xf32>, tensor<8x8xf32>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x3x4xf32>, %bias: tensor<4xf32>, %s: tensor<f32>) -> (tensor<2x3x4xf32>, tensor<6x4xf32>, tensor<2x4x3xf32>, tensor<2x2x2xf32>, tensor<2x3x8xf32>, tensor<2x3x4xf32>) {
  // CHECK: zt.broadcast_in_dim %{{.+}}, dims = [2] : (tensor<4xf32>) -> tensor<2x3x4xf32>
  %0 = zt.broadcast_in_dim %bias, dims = [2] : (tensor<4xf32>) -> tensor<2x3x4xf32>
  // CHECK: zt.reshape %{{.+}} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = zt.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // CHECK: zt.transpose %{{.+}}, perm = [0, 2, 1] : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %2 = zt.transpose %x, perm = [0, 2, 1] : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  // CHECK: zt.slice %{{.+}} [0:2, 1:3, 0:4:2] : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  %3 = zt.slice %x [0:2, 1:3, 0:4:2] : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  // CHECK: zt.concat(%{{.+}}, %{{.+}}) dim = 2 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  %4 = zt.concat(%x, %0) dim = 2 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  // CHECK: zt.broadcast_in_dim %{{.+}}, dims = [] : (tensor<f32>) -> tensor<2x3x4xf32>
  %5 = zt.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<2x3x4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x3x4xf32>, tensor<6x4xf32>, tensor<2x4x3xf32>, tensor<2x2x2xf32>, tensor<2x3x8xf32>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x3x4xf32>) -> (tensor<2xf32>, tensor<2x1x4xf32>, tensor<f32>) {
  // CHECK: zt.sum %{{.+}}, dims = [1, 2] : (tensor<2x3x4xf32>) -> tensor<2xf32>
  %0 = zt.sum %x, dims = [1, 2] : (tensor<2x3x4xf32>) -> tensor<2xf32>
  // CHECK: zt.mean %{{.+}}, dims = [1] {keep_dims} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %1 = zt.mean %x, dims = [1] {keep_dims} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  // CHECK: zt.max %{{.+}}, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  %2 = zt.max %x, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  return %0, %1, %2 : tensor<2xf32>, tensor<2x1x4xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @matmuls
func.func @matmuls(%a: tensor<2x8x16xf32>, %b: tensor<2x8x16xf32>, %w: tensor<16x32xf32>, %wt: tensor<32x16xf32>) -> (tensor<2x8x8xf32>, tensor<2x16x16xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) {
  // CHECK: zt.matmul %{{.+}}, %{{.+}} {transpose_rhs} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x8xf32>
  %0 = zt.matmul %a, %b {transpose_rhs} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x8xf32>
  // CHECK: zt.matmul %{{.+}}, %{{.+}} {transpose_lhs} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x16x16xf32>
  %1 = zt.matmul %a, %b {transpose_lhs} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x16x16xf32>
  // CHECK: zt.matmul %{{.+}}, %{{.+}} : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %2 = zt.matmul %a, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: zt.matmul %{{.+}}, %{{.+}} {transpose_rhs} : (tensor<2x8x16xf32>, tensor<32x16xf32>) -> tensor<2x8x32xf32>
  %3 = zt.matmul %a, %wt {transpose_rhs} : (tensor<2x8x16xf32>, tensor<32x16xf32>) -> tensor<2x8x32xf32>
  return %0, %1, %2, %3 : tensor<2x8x8xf32>, tensor<2x16x16xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x6x16xf32>, %v: tensor<2x4x6x8xf32>, %dy: tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x8xf32>) {
  // CHECK: zt.attention %{{.+}}, %{{.+}}, %{{.+}}, scale = 2.500000e-01 causal : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8xf32>)
  %y, %lse = zt.attention %q, %k, %v, scale = 0.25 causal : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8xf32>)
  // CHECK: zt.attention %{{.+}}, %{{.+}}, %{{.+}}, scale = 1.000000e+00 : (
  %y2, %lse2 = zt.attention %q, %k, %v, scale = 1.0 : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8xf32>)
  // CHECK: zt.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, scale = 2.500000e-01 causal : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8x8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x8xf32>)
  %dq, %dk, %dv = zt.attention_grad %q, %k, %v, %y, %lse, %dy, scale = 0.25 causal : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8x8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x8xf32>)
  return %y, %lse, %dq, %dk, %dv : tensor<2x4x8x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x8xf32>
}

// CHECK-LABEL: func.func @masked_attention
func.func @masked_attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x6x16xf32>, %v: tensor<2x4x6x8xf32>, %dy: tensor<2x4x8x8xf32>, %pad: tensor<2x1x1x6xi1>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) {
  // CHECK: zt.attention %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}}, scale = 2.500000e-01 causal : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x8xf32>, tensor<2x1x1x6xi1>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8xf32>)
  %y, %lse = zt.attention %q, %k, %v mask %pad, scale = 0.25 causal : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x8xf32>, tensor<2x1x1x6xi1>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8xf32>)
  // CHECK: zt.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}}, scale = 2.500000e-01 causal : (
  %dq, %dk, %dv = zt.attention_grad %q, %k, %v, %y, %lse, %dy mask %pad, scale = 0.25 causal : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8x8xf32>, tensor<2x1x1x6xi1>) -> (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x8xf32>)
  return %y, %dq : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>
}

// CHECK-LABEL: func.func @normalisation
func.func @normalisation(%x: tensor<2x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) {
  // CHECK: zt.softmax %{{.+}}, axis = -1 : tensor<2x8x16xf32>
  %0 = zt.softmax %x, axis = -1 : tensor<2x8x16xf32>
  // CHECK: zt.log_softmax %{{.+}}, axis = 1 : tensor<2x8x16xf32>
  %1 = zt.log_softmax %x, axis = 1 : tensor<2x8x16xf32>
  // CHECK: zt.layer_norm %{{.+}}, %{{.+}}, %{{.+}}, eps = 1.000000e-05 : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %2 = zt.layer_norm %x, %g, %b, eps = 1.0e-5 : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  // CHECK: zt.rms_norm %{{.+}}, %{{.+}}, eps = 9.9999999999999995E-7 : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %3 = zt.rms_norm %x, %g, eps = 1.0e-6 : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  return %0, %1, %2, %3 : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
}

// CHECK-LABEL: func.func @lookup_and_losses
func.func @lookup_and_losses(%table: tensor<100x16xf32>, %ids: tensor<2x8xi32>, %ids64: tensor<4xi64>, %logits: tensor<2x8x100xf32>, %p: tensor<4x3xf32>, %t: tensor<4x3xf32>) -> (tensor<2x8x16xf32>, tensor<4x16xf32>, tensor<f32>, tensor<f32>) {
  // CHECK: zt.embedding %{{.+}}, %{{.+}} : (tensor<100x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
  %0 = zt.embedding %table, %ids : (tensor<100x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
  // CHECK: zt.embedding %{{.+}}, %{{.+}} : (tensor<100x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  %1 = zt.embedding %table, %ids64 : (tensor<100x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  // CHECK: zt.softmax_cross_entropy %{{.+}}, %{{.+}} : (tensor<2x8x100xf32>, tensor<2x8xi32>) -> tensor<f32>
  %2 = zt.softmax_cross_entropy %logits, %ids : (tensor<2x8x100xf32>, tensor<2x8xi32>) -> tensor<f32>
  // CHECK: zt.softmax_cross_entropy %{{.+}}, %{{.+}} {ignore_index = -100 : i64} : (tensor<2x8x100xf32>, tensor<2x8xi32>) -> tensor<f32>
  %ignoring = zt.softmax_cross_entropy %logits, %ids {ignore_index = -100 : i64} : (tensor<2x8x100xf32>, tensor<2x8xi32>) -> tensor<f32>
  // CHECK: zt.mse %{{.+}}, %{{.+}} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  %3 = zt.mse %p, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return %0, %1, %2, %3 : tensor<2x8x16xf32>, tensor<4x16xf32>, tensor<f32>, tensor<f32>
}

// CHECK-LABEL: func.func @dropout
func.func @dropout(%x: tensor<4x16xf32>, %step: tensor<i64>) -> tensor<4x16xf32> {
  // CHECK: zt.dropout %{{.+}}, %{{.+}}, rate = 1.000000e-01, seed = 7 : (tensor<4x16xf32>, tensor<i64>) -> tensor<4x16xf32>
  %0 = zt.dropout %x, %step, rate = 0.1, seed = 7 : (tensor<4x16xf32>, tensor<i64>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// An f32 parameter's update may read a bf16 gradient (mixed precision's).
// CHECK-LABEL: func.func @bf16_gradients
func.func @bf16_gradients(%p: tensor<10xf32>, %g: tensor<10xbf16>, %m: tensor<10xf32>, %v: tensor<10xf32>, %step: tensor<i64>) -> (tensor<10xf32>, tensor<10xf32>) {
  // CHECK: zt.sgd %{{.+}}, %{{.+}} {lr = 1.000000e-01 : f64} : (tensor<10xf32>, tensor<10xbf16>) -> tensor<10xf32>
  %0 = zt.sgd %p, %g {lr = 0.1 : f64} : (tensor<10xf32>, tensor<10xbf16>) -> tensor<10xf32>
  // CHECK: zt.adamw {{.+}} : (tensor<10xf32>, tensor<10xbf16>, tensor<10xf32>, tensor<10xf32>, tensor<i64>)
  %1, %2, %3 = zt.adamw %p, %g, %m, %v, %step {lr = 1.0e-3 : f64} : (tensor<10xf32>, tensor<10xbf16>, tensor<10xf32>, tensor<10xf32>, tensor<i64>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>)
  // CHECK: zt.sum_squares %{{.+}} : (tensor<10xbf16>) -> tensor<f32>
  %4 = zt.sum_squares %g : (tensor<10xbf16>) -> tensor<f32>
  return %0, %1 : tensor<10xf32>, tensor<10xf32>
}

// CHECK-LABEL: func.func @optimizers
func.func @optimizers(%p: tensor<10xf32>, %g: tensor<10xf32>, %buf: tensor<10xf32>, %m: tensor<10xf32>, %v: tensor<10xf32>, %step: tensor<i64>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>) {
  // CHECK: zt.sgd %{{.+}}, %{{.+}} {lr = 1.000000e-01 : f64} : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
  %0 = zt.sgd %p, %g {lr = 0.1 : f64} : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
  // CHECK: zt.sgd %{{.+}}, %{{.+}}, %{{.+}} {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, nesterov, weight_decay = 1.000000e-04 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>) -> (tensor<10xf32>, tensor<10xf32>)
  %1, %2 = zt.sgd %p, %g, %buf {lr = 0.1 : f64, momentum = 0.9 : f64, weight_decay = 1.0e-4 : f64, nesterov} : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>) -> (tensor<10xf32>, tensor<10xf32>)
  // CHECK: zt.adamw %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {beta1 = 8.000000e-01 : f64, lr = 1.000000e-03 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<i64>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>)
  %3, %4, %5 = zt.adamw %p, %g, %m, %v, %step {lr = 1.0e-3 : f64, beta1 = 0.8 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<i64>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>)
  return %0, %1, %2, %3, %4, %5 : tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>
}

// Clipping by the global norm: the sum of squares chained over the
// gradients, and the updates that read it.
// CHECK-LABEL: func.func @scheduled_optimizers
func.func @scheduled_optimizers(%p: tensor<10xf32>, %g: tensor<10xf32>, %m: tensor<10xf32>, %v: tensor<10xf32>, %step: tensor<i64>, %s: tensor<f32>) -> (tensor<10xf32>, tensor<10xf32>, tensor<f32>, tensor<f32>) {
  // CHECK: %[[F:.+]] = zt.lr_schedule %{{.+}} {cosine, decay_steps = 100 : i64, min_factor = 1.000000e-01 : f64, warmup_steps = 10 : i64} : (tensor<i64>) -> tensor<f32>
  %f = zt.lr_schedule %step {warmup_steps = 10 : i64, decay_steps = 100 : i64, min_factor = 0.1 : f64, cosine} : (tensor<i64>) -> tensor<f32>
  // CHECK: zt.lr_schedule %{{.+}} {warmup_steps = 5 : i64} : (tensor<i64>) -> tensor<f32>
  %w = zt.lr_schedule %step {warmup_steps = 5 : i64} : (tensor<i64>) -> tensor<f32>
  // CHECK: zt.sgd %{{.+}}, %{{.+}} lr_factor %[[F]] {lr = 1.000000e-01 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<f32>) -> tensor<10xf32>
  %0 = zt.sgd %p, %g lr_factor %f {lr = 0.1 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<f32>) -> tensor<10xf32>
  // CHECK: zt.adamw %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} clip %{{.+}} lr_factor %[[F]] {lr = 1.000000e-03 : f64, max_grad_norm = 5.000000e-01 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<i64>, tensor<f32>, tensor<f32>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>)
  %1, %2, %3 = zt.adamw %p, %g, %m, %v, %step clip %s lr_factor %f {lr = 1.0e-3 : f64, max_grad_norm = 0.5 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<i64>, tensor<f32>, tensor<f32>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>)
  return %0, %1, %f, %w : tensor<10xf32>, tensor<10xf32>, tensor<f32>, tensor<f32>
}

// CHECK-LABEL: func.func @clipped_optimizers
func.func @clipped_optimizers(%p: tensor<10xf32>, %g: tensor<10xf32>, %buf: tensor<10xf32>, %m: tensor<10xf32>, %v: tensor<10xf32>, %step: tensor<i64>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>) {
  // CHECK: %[[S0:.+]] = zt.sum_squares %{{.+}} : (tensor<10xf32>) -> tensor<f32>
  %s0 = zt.sum_squares %g : (tensor<10xf32>) -> tensor<f32>
  // CHECK: %[[S1:.+]] = zt.sum_squares %{{.+}}, %[[S0]] : (tensor<10xf32>, tensor<f32>) -> tensor<f32>
  %s1 = zt.sum_squares %buf, %s0 : (tensor<10xf32>, tensor<f32>) -> tensor<f32>
  // CHECK: zt.sgd %{{.+}}, %{{.+}}, %{{.+}} clip %[[S1]] {lr = 1.000000e-01 : f64, max_grad_norm = 1.000000e+00 : f64, momentum = 9.000000e-01 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<f32>) -> (tensor<10xf32>, tensor<10xf32>)
  %0, %1 = zt.sgd %p, %g, %buf clip %s1 {lr = 0.1 : f64, momentum = 0.9 : f64, max_grad_norm = 1.0 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<f32>) -> (tensor<10xf32>, tensor<10xf32>)
  // CHECK: zt.adamw %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} clip %[[S1]] {lr = 1.000000e-03 : f64, max_grad_norm = 5.000000e-01 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<i64>, tensor<f32>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>)
  %2, %3, %4 = zt.adamw %p, %g, %m, %v, %step clip %s1 {lr = 1.0e-3 : f64, max_grad_norm = 0.5 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<i64>, tensor<f32>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>)
  return %0, %1, %2, %3 : tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%a: tensor<8x4xf32>, %b: tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>) {
  // CHECK: zt.all_reduce %{{.+}}, %{{.+}} {mean} : (tensor<8x4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>)
  %0:2 = zt.all_reduce %a, %b {mean} : (tensor<8x4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>)
  // CHECK: zt.all_reduce %{{.+}} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = zt.all_reduce %b : (tensor<4xf32>) -> tensor<4xf32>
  return %0#0, %0#1, %1 : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @zero_one
func.func @zero_one(%flat: tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) {
  // CHECK: zt.reduce_scatter %{{.+}} {mean, ranks = 2 : i64} : (tensor<8xf32>) -> tensor<4xf32>
  %0 = zt.reduce_scatter %flat {mean, ranks = 2 : i64} : (tensor<8xf32>) -> tensor<4xf32>
  // CHECK: zt.shard %{{.+}} {ranks = 2 : i64} : (tensor<8xf32>) -> tensor<4xf32>
  %1 = zt.shard %flat {ranks = 2 : i64} : (tensor<8xf32>) -> tensor<4xf32>
  // CHECK: zt.all_gather %{{.+}} {ranks = 2 : i64} : (tensor<4xf32>) -> tensor<8xf32>
  %2 = zt.all_gather %1 {ranks = 2 : i64} : (tensor<4xf32>) -> tensor<8xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @packed_reduce_scatter
func.func @packed_reduce_scatter(%w: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<4xf32> {
  // CHECK: %[[P:.+]]:2 = zt.pack %{{.+}}, %{{.+}} : (tensor<2x3xf32>, tensor<2xf32>) -> (tensor<2x3xf32>, tensor<2xf32>)
  %p:2 = zt.pack %w, %b : (tensor<2x3xf32>, tensor<2xf32>) -> (tensor<2x3xf32>, tensor<2xf32>)
  // CHECK: zt.reduce_scatter %[[P]]#0, %[[P]]#1 {mean, ranks = 2 : i64} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<4xf32>
  %0 = zt.reduce_scatter %p#0, %p#1 {mean, ranks = 2 : i64} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// One gradient of any shape, alone in its bucket, is read flat too.
// CHECK-LABEL: func.func @reduce_scatter_of_one_matrix
func.func @reduce_scatter_of_one_matrix(%w: tensor<4x3xf32>) -> tensor<6xf32> {
  // CHECK: zt.reduce_scatter %{{.+}} {mean, ranks = 2 : i64} : (tensor<4x3xf32>) -> tensor<6xf32>
  %0 = zt.reduce_scatter %w {mean, ranks = 2 : i64} : (tensor<4x3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// CHECK-LABEL: func.func @shard_of_several
func.func @shard_of_several(%w: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<5xf32> {
  // CHECK: zt.shard %{{.+}}, %{{.+}} {ranks = 2 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<5xf32>
  %0 = zt.shard %w, %b {ranks = 2 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// CHECK-LABEL: func.func @argument_roles
// CHECK-SAME: {zt.role = #zt.role<input>}
// CHECK-SAME: {zt.role = #zt.role<label>}
// CHECK-SAME: {zt.init = #zt.init<zeros>, zt.role = #zt.role<parameter>}
// CHECK-SAME: {zt.init = #zt.init<ones>, zt.role = #zt.role<parameter>}
// CHECK-SAME: {zt.init = #zt.init<constant(value = 5.000000e-01)>, zt.role = #zt.role<parameter>}
// CHECK-SAME: {zt.init = #zt.init<normal(mean = 0.000000e+00, std = 2.000000e-02)>, zt.role = #zt.role<parameter>}
// CHECK-SAME: {zt.init = #zt.init<uniform(low = -1.000000e-01, high = 1.000000e-01)>, zt.role = #zt.role<parameter>}
// CHECK-SAME: {zt.init = #zt.init<given>, zt.role = #zt.role<parameter>}
// CHECK-SAME: {zt.role = #zt.role<step>}
func.func @argument_roles(
    %x: tensor<4x8xf32> {zt.role = #zt.role<input>},
    %y: tensor<4xi32> {zt.role = #zt.role<label>},
    %w0: tensor<8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %w1: tensor<8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>},
    %w2: tensor<8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<constant(value = 0.5)>},
    %w3: tensor<8x8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.02)>},
    %w4: tensor<8xbf16> {zt.role = #zt.role<parameter>, zt.init = #zt.init<uniform(low = -0.1, high = 0.1)>},
    %w5: tensor<8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<given>},
    %step: tensor<i64> {zt.role = #zt.role<step>}) {
  return
}

// Entry points after zt-autodiff / zt-optimizer: names, roles of persistent
// state, and results tied to the argument they overwrite.
// CHECK-LABEL: func.func @entry_point
// CHECK-SAME: {zt.init = #zt.init<zeros>, zt.name = "w", zt.role = #zt.role<parameter>}
// CHECK-SAME: {zt.init = #zt.init<zeros>, zt.name = "w.momentum", zt.role = #zt.role<optimizer_state>}
// CHECK-SAME: {zt.init = #zt.init<zeros>, zt.name = "w.grad_acc", zt.role = #zt.role<accumulator>}
// CHECK-SAME: -> (tensor<8xf32> {zt.tied = 0 : i64}, tensor<8xf32> {zt.gradient_of = 0 : i64, zt.name = "w.grad"})
// CHECK-SAME: attributes {zt.entry = "train_step"}
func.func @entry_point(
    %w: tensor<8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "w"},
    %m: tensor<8xf32> {zt.role = #zt.role<optimizer_state>, zt.init = #zt.init<zeros>, zt.name = "w.momentum"},
    %a: tensor<8xf32> {zt.role = #zt.role<accumulator>, zt.init = #zt.init<zeros>, zt.name = "w.grad_acc"})
    -> (tensor<8xf32> {zt.tied = 0 : i64}, tensor<8xf32> {zt.gradient_of = 0 : i64, zt.name = "w.grad"})
    attributes {zt.entry = "train_step"} {
  return %w, %a : tensor<8xf32>, tensor<8xf32>
}

// The backward ops zt-autodiff emits.
// CHECK-LABEL: func.func @backward_ops
func.func @backward_ops(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>, %g: tensor<8xf32>,
                        %r: tensor<4xf32>, %part: tensor<4x3xf32>, %ids: tensor<4xi32>,
                        %dl: tensor<f32>) {
  // CHECK: zt.scale %{{.+}}, factor = 5.000000e-01 : tensor<4x8xf32>
  %0 = zt.scale %x, factor = 0.5 : tensor<4x8xf32>
  // CHECK: zt.relu_grad %{{.+}}, %{{.+}} : tensor<4x8xf32>
  %1 = zt.relu_grad %x, %dy : tensor<4x8xf32>
  // CHECK: zt.gelu_grad %{{.+}}, %{{.+}} : tensor<4x8xf32>
  %2 = zt.gelu_grad %x, %dy : tensor<4x8xf32>
  // CHECK: zt.gelu_erf_grad %{{.+}}, %{{.+}} : tensor<4x8xf32>
  %gerf = zt.gelu_erf_grad %x, %dy : tensor<4x8xf32>
  // CHECK: zt.silu_grad %{{.+}}, %{{.+}} : tensor<4x8xf32>
  %3 = zt.silu_grad %x, %dy : tensor<4x8xf32>
  // CHECK: zt.tanh_grad %{{.+}}, %{{.+}} : tensor<4x8xf32>
  %4 = zt.tanh_grad %x, %dy : tensor<4x8xf32>
  // CHECK: zt.sigmoid_grad %{{.+}}, %{{.+}} : tensor<4x8xf32>
  %5 = zt.sigmoid_grad %x, %dy : tensor<4x8xf32>
  // CHECK: zt.sqrt_grad %{{.+}}, %{{.+}} : tensor<4x8xf32>
  %6 = zt.sqrt_grad %x, %dy : tensor<4x8xf32>
  // CHECK: zt.rsqrt_grad %{{.+}}, %{{.+}} : tensor<4x8xf32>
  %7 = zt.rsqrt_grad %x, %dy : tensor<4x8xf32>
  // CHECK: zt.softmax_grad %{{.+}}, %{{.+}}, axis = -1 : tensor<4x8xf32>
  %8 = zt.softmax_grad %x, %dy, axis = -1 : tensor<4x8xf32>
  // CHECK: zt.log_softmax_grad %{{.+}}, %{{.+}}, axis = 1 : tensor<4x8xf32>
  %9 = zt.log_softmax_grad %x, %dy, axis = 1 : tensor<4x8xf32>
  // CHECK: zt.max_grad %{{.+}}, %{{.+}}, dims = [1] : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  %10 = zt.max_grad %x, %r, dims = [1] : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  // CHECK: zt.slice_grad %{{.+}} [0:4, 2:8:2] : (tensor<4x3xf32>) -> tensor<4x8xf32>
  %11 = zt.slice_grad %part [0:4, 2:8:2] : (tensor<4x3xf32>) -> tensor<4x8xf32>
  // CHECK: zt.layer_norm_grad %{{.+}}, %{{.+}}, %{{.+}}, eps = 1.000000e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %12:3 = zt.layer_norm_grad %x, %g, %dy, eps = 1.0e-5 : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: zt.rms_norm_grad %{{.+}}, %{{.+}}, %{{.+}}, eps = 9.9999999999999995E-7 : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  %13:2 = zt.rms_norm_grad %x, %g, %dy, eps = 1.0e-6 : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  // CHECK: zt.embedding_grad %{{.+}}, %{{.+}} : (tensor<4xi32>, tensor<4x8xf32>) -> tensor<16x8xf32>
  %14 = zt.embedding_grad %ids, %dy : (tensor<4xi32>, tensor<4x8xf32>) -> tensor<16x8xf32>
  // CHECK: zt.softmax_cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} : (tensor<4x8xf32>, tensor<4xi32>, tensor<f32>) -> tensor<4x8xf32>
  %15 = zt.softmax_cross_entropy_grad %x, %ids, %dl : (tensor<4x8xf32>, tensor<4xi32>, tensor<f32>) -> tensor<4x8xf32>
  // CHECK: zt.mse_grad %{{.+}}, %{{.+}}, %{{.+}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %16 = zt.mse_grad %x, %dy, %dl : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return
}

// Mixed precision: conversions, and bf16 products into f32 or bf16.
// CHECK-LABEL: func.func @bf16
func.func @bf16(%x: tensor<4x8xf32>, %w: tensor<8x2xbf16>) -> (tensor<4x2xf32>, tensor<4x2xbf16>, tensor<8x2xf32>) {
  // CHECK: %[[XB:.+]] = zt.convert %{{.+}} : tensor<4x8xf32> -> tensor<4x8xbf16>
  %xb = zt.convert %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  // CHECK: zt.matmul %[[XB]], %{{.+}} : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xf32>
  %y = zt.matmul %xb, %w : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xf32>
  // CHECK: zt.matmul %[[XB]], %{{.+}} : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xbf16>
  %yb = zt.matmul %xb, %w : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xbf16>
  // CHECK: zt.convert %{{.+}} : tensor<8x2xbf16> -> tensor<8x2xf32>
  %wf = zt.convert %w : tensor<8x2xbf16> -> tensor<8x2xf32>
  return %y, %yb, %wf : tensor<4x2xf32>, tensor<4x2xbf16>, tensor<8x2xf32>
}

// The loss reads bf16 logits and gives an f32 loss; its gradient is bf16.
// CHECK-LABEL: func.func @bf16_loss
func.func @bf16_loss(%l: tensor<4x10xbf16>, %y: tensor<4xi32>) -> (tensor<f32>, tensor<4x10xbf16>) {
  // CHECK: zt.softmax_cross_entropy %{{.+}}, %{{.+}} : (tensor<4x10xbf16>, tensor<4xi32>) -> tensor<f32>
  %loss = zt.softmax_cross_entropy %l, %y : (tensor<4x10xbf16>, tensor<4xi32>) -> tensor<f32>
  // CHECK: zt.softmax_cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} : (tensor<4x10xbf16>, tensor<4xi32>, tensor<f32>) -> tensor<4x10xbf16>
  %g = zt.softmax_cross_entropy_grad %l, %y, %loss : (tensor<4x10xbf16>, tensor<4xi32>, tensor<f32>) -> tensor<4x10xbf16>
  // zt-fuse-classifier's: both in one op, bf16 logits giving an f32 loss.
  // CHECK: %{{.+}}, %{{.+}} = zt.softmax_cross_entropy_fused %{{.+}}, %{{.+}}, %{{.+}} {ignore_index = -100 : i64, label_smoothing = 1.000000e-01 : f64} : (tensor<4x10xbf16>, tensor<4xi32>, tensor<f32>) -> (tensor<f32>, tensor<4x10xbf16>)
  %fused:2 = zt.softmax_cross_entropy_fused %l, %y, %loss {ignore_index = -100 : i64, label_smoothing = 0.1 : f64} : (tensor<4x10xbf16>, tensor<4xi32>, tensor<f32>) -> (tensor<f32>, tensor<4x10xbf16>)
  return %loss, %g : tensor<f32>, tensor<4x10xbf16>
}

// Grouped-query attention (6 query heads on 2 key and value heads) with
// dropout of the probabilities, a padding mask, and its gradient.
// CHECK-LABEL: func.func @grouped_dropout_attention
func.func @grouped_dropout_attention(%q: tensor<2x6x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>, %dy: tensor<2x6x8x8xf32>, %pad: tensor<2x1x1x6xi1>, %step: tensor<i64>) -> (tensor<2x6x8x8xf32>, tensor<2x2x6x16xf32>) {
  // CHECK: zt.attention %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} step %{{.+}}, scale = 2.500000e-01 causal dropout = 1.000000e-01 seed = 3 : (tensor<2x6x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32>, tensor<2x1x1x6xi1>, tensor<i64>) -> (tensor<2x6x8x8xf32>, tensor<2x6x8xf32>)
  %y, %lse = zt.attention %q, %k, %v mask %pad step %step, scale = 0.25 causal dropout = 0.1 seed = 3 : (tensor<2x6x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32>, tensor<2x1x1x6xi1>, tensor<i64>) -> (tensor<2x6x8x8xf32>, tensor<2x6x8xf32>)
  // CHECK: zt.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} step %{{.+}}, scale = 2.500000e-01 causal dropout = 1.000000e-01 seed = 3 : (
  %dq, %dk, %dv = zt.attention_grad %q, %k, %v, %y, %lse, %dy mask %pad step %step, scale = 0.25 causal dropout = 0.1 seed = 3 : (tensor<2x6x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32>, tensor<2x6x8x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8x8xf32>, tensor<2x1x1x6xi1>, tensor<i64>) -> (tensor<2x6x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32>)
  return %y, %dk : tensor<2x6x8x8xf32>, tensor<2x2x6x16xf32>
}

// Integers: arithmetic, running sums and conversions.
// CHECK-LABEL: func.func @integers
func.func @integers(%ids: tensor<2x5xi32>, %m: tensor<2x5xi1>) -> tensor<2x5xi64> {
  // CHECK: zt.convert %{{.+}} : tensor<2x5xi1> -> tensor<2x5xi32>
  %mask = zt.convert %m : tensor<2x5xi1> -> tensor<2x5xi32>
  // CHECK: zt.cumsum %{{.+}} {dim = 1 : i64} : tensor<2x5xi32>
  %sums = zt.cumsum %mask {dim = 1 : i64} : tensor<2x5xi32>
  // CHECK: zt.mul %{{.+}}, %{{.+}} : tensor<2x5xi32>
  %kept = zt.mul %sums, %mask : tensor<2x5xi32>
  // CHECK: zt.add %{{.+}}, %{{.+}} : tensor<2x5xi32>
  %shifted = zt.add %kept, %ids : tensor<2x5xi32>
  // CHECK: zt.convert %{{.+}} : tensor<2x5xi32> -> tensor<2x5xi64>
  %wide = zt.convert %shifted : tensor<2x5xi32> -> tensor<2x5xi64>
  return %wide : tensor<2x5xi64>
}

// zt-fuse-elementwise's programs: two results; a dropout with its step.
// CHECK-LABEL: func.func @fused
func.func @fused(%x: tensor<4x8xf32>, %b: tensor<4x8xf32>, %step: tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: %{{.+}}:2 = zt.fused(%{{.+}}, %{{.+}}) {args = array<i64: 0, 1, 2, 3, 1>, numbers = array<f64: 2.500000e-01, 5.000000e-01>, ops = ["add", "clamp", "sub"], outputs = array<i64: 4, 2>, seeds = array<i64>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %0:2 = zt.fused(%x, %b) {ops = ["add", "clamp", "sub"], args = array<i64: 0, 1, 2, 3, 1>, numbers = array<f64: 0.25, 0.5>, outputs = array<i64: 4, 2>, seeds = array<i64>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  // CHECK: zt.fused(%{{.+}}, %{{.+}}, %{{.+}}) {args = array<i64: 0, 2, 1>, numbers = array<f64: 1.000000e-01>, ops = ["dropout", "add"], outputs = array<i64: 3>, seeds = array<i64: 5>} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  %1 = zt.fused(%x, %b, %step) {ops = ["dropout", "add"], args = array<i64: 0, 2, 1>, numbers = array<f64: 0.1>, outputs = array<i64: 3>, seeds = array<i64: 5>} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  return %0#0, %0#1, %1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
