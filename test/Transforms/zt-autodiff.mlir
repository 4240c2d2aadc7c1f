// One case per vector-Jacobian rule: the backward ops zt-autodiff emits for
// each op, and how contributions to one value are summed. Most cases reduce
// the op's result with zt.sum, whose gradient is the seed broadcast (%[[DY]]).
// The rules as emitted, without recomputation (zt-autodiff-recompute.mlir).
// RUN: zt-opt %s -split-input-file -zt-autodiff=recompute=false | FileCheck %s
// RUN: zt-opt %s -split-input-file -zt-autodiff=recompute=false -verify-diagnostics -o /dev/null
// RUN: zt-opt %s -split-input-file -zt-autodiff="accumulate=true recompute=false" 2>/dev/null | FileCheck %s --check-prefix=ACC

// The signature: every argument named, the loss and one gradient per
// parameter returned, the function marked as a training step.
// CHECK-LABEL: func.func @signature
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32> {zt.name = "x", zt.role = #zt.role<input>}
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "arg1", zt.role = #zt.role<parameter>}
// CHECK-SAME: -> (tensor<f32> {zt.name = "loss"}, tensor<8xf32> {zt.gradient_of = 1 : i64, zt.name = "arg1.grad"})
// CHECK-SAME: attributes {zt.backward_start = {{[0-9]+}} : i64, zt.entry = "train_step"}
// CHECK: %[[WB:.+]] = zt.broadcast_in_dim %[[W]], dims = [1]
// CHECK: %[[Y:.+]] = zt.mul %[[X]], %[[WB]]
// CHECK: %[[L:.+]] = zt.sum %[[Y]], dims = [0, 1]
// CHECK: %[[ONE:.+]] = zt.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim %[[ONE]], dims = [] : (tensor<f32>) -> tensor<4x8xf32>
// CHECK: %[[DWB:.+]] = zt.mul %[[DY]], %[[X]]
// CHECK: %[[DW:.+]] = zt.sum %[[DWB]], dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
// CHECK: return %[[L]], %[[DW]]
// With accumulate: a zero-initialised accumulator argument per parameter,
// the gradient added into it and the sum returned tied to it (and still
// marked as the parameter's gradient); a microbatch entry.
// ACC-LABEL: func.func @signature
// ACC-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32> {zt.name = "x", zt.role = #zt.role<input>}
// ACC-SAME: %[[W:[a-z0-9]+]]: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "arg1", zt.role = #zt.role<parameter>}
// ACC-SAME: %[[ACC:[a-z0-9]+]]: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "arg1.grad_acc", zt.role = #zt.role<accumulator>}
// ACC-SAME: -> (tensor<f32> {zt.name = "loss"}, tensor<8xf32> {zt.gradient_of = 1 : i64, zt.name = "arg1.grad_acc", zt.tied = 2 : i64})
// ACC-SAME: attributes {zt.backward_start = {{[0-9]+}} : i64, zt.entry = "microbatch"}
// ACC: %[[DW:.+]] = zt.sum %{{.+}}, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
// ACC-NEXT: %[[NEW:.+]] = zt.add %[[ACC]], %[[DW]] : tensor<8xf32>
// ACC-NEXT: return %{{.+}}, %[[NEW]]
func.func @signature(%x: tensor<4x8xf32> {zt.role = #zt.role<input>, zt.name = "x"},
                     %w: tensor<8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %wb = zt.broadcast_in_dim %w, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %y = zt.mul %x, %wb : tensor<4x8xf32>
  %l = zt.sum %y, dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// add passes the gradient to both operands; a value used twice gets the sum
// of its two contributions.
// CHECK-LABEL: func.func @add_fan_out
// CHECK-SAME: (%[[W:[a-z0-9]+]]:
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: %[[DW:.+]] = zt.add %[[DY]], %[[DY]] : tensor<4xf32>
// CHECK-NEXT: return %{{.+}}, %[[DW]]
func.func @add_fan_out(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %y = zt.add %w, %w : tensor<4xf32>
  %l = zt.sum %y, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// sub: the rhs gets the negated gradient.
// CHECK-LABEL: func.func @sub
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: %[[NEG:.+]] = zt.neg %[[DY]]
// CHECK-NEXT: return %{{.+}}, %[[DY]], %[[NEG]]
func.func @sub(%a: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
               %b: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %y = zt.sub %a, %b : tensor<4xf32>
  %l = zt.sum %y, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// mul: each operand's gradient is the incoming one times the other operand.
// CHECK-LABEL: func.func @mul
// CHECK-SAME: (%[[A:[a-z0-9]+]]: {{.+}}, %[[B:[a-z0-9]+]]:
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: %[[DA:.+]] = zt.mul %[[DY]], %[[B]]
// CHECK-NEXT: %[[DB:.+]] = zt.mul %[[DY]], %[[A]]
// CHECK-NEXT: return %{{.+}}, %[[DA]], %[[DB]]
func.func @mul(%a: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
               %b: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %y = zt.mul %a, %b : tensor<4xf32>
  %l = zt.sum %y, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// div: d lhs = dy / rhs, d rhs = -(dy / rhs) * result.
// CHECK-LABEL: func.func @div
// CHECK-SAME: (%[[A:[a-z0-9]+]]: {{.+}}, %[[B:[a-z0-9]+]]:
// CHECK: %[[Y:.+]] = zt.div %[[A]], %[[B]]
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: %[[Q:.+]] = zt.div %[[DY]], %[[B]]
// CHECK-NEXT: %[[P:.+]] = zt.mul %[[Q]], %[[Y]]
// CHECK-NEXT: %[[DB:.+]] = zt.neg %[[P]]
// CHECK-NEXT: return %{{.+}}, %[[Q]], %[[DB]]
func.func @div(%a: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
               %b: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>}) -> tensor<f32> {
  %y = zt.div %a, %b : tensor<4xf32>
  %l = zt.sum %y, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// neg, exp (times its result), log (divided by its operand).
// CHECK-LABEL: func.func @neg_exp_log
// CHECK-SAME: (%[[W:[a-z0-9]+]]:
// CHECK: %[[N:.+]] = zt.neg %[[W]]
// CHECK-NEXT: %[[E:.+]] = zt.exp %[[N]]
// CHECK-NEXT: %[[LG:.+]] = zt.log %[[E]]
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: %[[DE:.+]] = zt.div %[[DY]], %[[E]]
// CHECK-NEXT: %[[DN:.+]] = zt.mul %[[DE]], %[[E]]
// CHECK-NEXT: %[[DW:.+]] = zt.neg %[[DN]]
// CHECK-NEXT: return %{{.+}}, %[[DW]]
func.func @neg_exp_log(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %n = zt.neg %w : tensor<4xf32>
  %e = zt.exp %n : tensor<4xf32>
  %g = zt.log %e : tensor<4xf32>
  %l = zt.sum %g, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Activations whose derivative follows from the result read the result
// (tanh, sigmoid, relu, sqrt, rsqrt); gelu and silu read the operand.
// CHECK-LABEL: func.func @activations
// CHECK-SAME: (%[[W:[a-z0-9]+]]:
// CHECK: %[[T:.+]] = zt.tanh %[[W]]
// CHECK-NEXT: %[[S:.+]] = zt.sigmoid %[[T]]
// CHECK-NEXT: %[[R:.+]] = zt.relu %[[S]]
// CHECK-NEXT: %[[G:.+]] = zt.gelu %[[R]]
// CHECK-NEXT: %[[SI:.+]] = zt.silu %[[G]]
// CHECK-NEXT: %[[SQ:.+]] = zt.sqrt %[[SI]]
// CHECK-NEXT: %[[RS:.+]] = zt.rsqrt %[[SQ]]
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: %[[D6:.+]] = zt.rsqrt_grad %[[RS]], %[[DY]]
// CHECK-NEXT: %[[D5:.+]] = zt.sqrt_grad %[[SQ]], %[[D6]]
// CHECK-NEXT: %[[D4:.+]] = zt.silu_grad %[[G]], %[[D5]]
// CHECK-NEXT: %[[D3:.+]] = zt.gelu_grad %[[R]], %[[D4]]
// CHECK-NEXT: %[[D2:.+]] = zt.relu_grad %[[R]], %[[D3]]
// CHECK-NEXT: %[[D1:.+]] = zt.sigmoid_grad %[[S]], %[[D2]]
// CHECK-NEXT: %[[D0:.+]] = zt.tanh_grad %[[T]], %[[D1]]
// CHECK-NEXT: return %{{.+}}, %[[D0]]
func.func @activations(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %0 = zt.tanh %w : tensor<4xf32>
  %1 = zt.sigmoid %0 : tensor<4xf32>
  %2 = zt.relu %1 : tensor<4xf32>
  %3 = zt.gelu %2 : tensor<4xf32>
  %4 = zt.silu %3 : tensor<4xf32>
  %5 = zt.sqrt %4 : tensor<4xf32>
  %6 = zt.rsqrt %5 : tensor<4xf32>
  %l = zt.sum %6, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// scale: the gradient is scaled by the same factor.
// CHECK-LABEL: func.func @scale
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: %[[DW:.+]] = zt.scale %[[DY]], factor = 2.500000e-01
// CHECK-NEXT: return %{{.+}}, %[[DW]]
func.func @scale(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %y = zt.scale %w, factor = 0.25 : tensor<4xf32>
  %l = zt.sum %y, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// broadcast_in_dim: sum over the new dimension (0) and the repeated size-1
// dimension (2), then reshape back to the operand's shape.
// CHECK-LABEL: func.func @broadcast
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim %{{.+}}, dims = [] : (tensor<f32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[S:.+]] = zt.sum %[[DY]], dims = [0, 2] : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT: %[[DW:.+]] = zt.reshape %[[S]] : (tensor<3xf32>) -> tensor<3x1xf32>
// CHECK-NEXT: return %{{.+}}, %[[DW]]
func.func @broadcast(%w: tensor<3x1xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %y = zt.broadcast_in_dim %w, dims = [1, 2] : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %l = zt.sum %y, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// reshape: reshape back; transpose: the inverse permutation.
// CHECK-LABEL: func.func @reshape_transpose
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim %{{.+}} -> tensor<4x2x3xf32>
// CHECK-NEXT: %[[DT:.+]] = zt.transpose %[[DY]], perm = [1, 2, 0] : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[DW:.+]] = zt.reshape %[[DT]] : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT: return %{{.+}}, %[[DW]]
func.func @reshape_transpose(%w: tensor<6x4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %r = zt.reshape %w : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
  %t = zt.transpose %r, perm = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %l = zt.sum %t, dims = [0, 1, 2] : (tensor<4x2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A slice's gradient is scattered into zeros of the operand's shape.
// CHECK-LABEL: func.func @slice
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim %{{.+}} -> tensor<4x3xf32>
// CHECK-NEXT: %[[DW:.+]] = zt.slice_grad %[[DY]] [0:4, 2:8:2] : (tensor<4x3xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %{{.+}}, %[[DW]]
func.func @slice(%w: tensor<4x8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %s = zt.slice %w [0:4, 2:8:2] : (tensor<4x8xf32>) -> tensor<4x3xf32>
  %l = zt.sum %s, dims = [0, 1] : (tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Slices that tile their operand along one dimension (attention's q, k, v)
// get one concat of their gradients, in offset order, instead of three
// zero-filled full-size tensors added up.
// CHECK-LABEL: func.func @slices_tiling
// CHECK: %[[DC:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: %[[DA:.+]] = zt.mul %[[DC]], %{{.+}} : tensor<2x4xf32>
// CHECK-NEXT: %[[DB:.+]] = zt.mul %[[DC]], %{{.+}} : tensor<2x4xf32>
// CHECK-NEXT: %[[DW:.+]] = zt.concat(%[[DA]], %[[DB]], %[[DC]]) dim = 1 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT: return %{{.+}}, %[[DW]]
func.func @slices_tiling(%w: tensor<2x12xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %c = zt.slice %w [0:2, 8:12] : (tensor<2x12xf32>) -> tensor<2x4xf32>
  %a = zt.slice %w [0:2, 0:4] : (tensor<2x12xf32>) -> tensor<2x4xf32>
  %b = zt.slice %w [0:2, 4:8] : (tensor<2x12xf32>) -> tensor<2x4xf32>
  %ab = zt.mul %a, %b : tensor<2x4xf32>
  %s = zt.add %ab, %c : tensor<2x4xf32>
  %l = zt.sum %s, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Slices that leave a gap are scattered one by one (last use first) and
// summed.
// CHECK-LABEL: func.func @slices_with_gap
// CHECK: %[[G1:.+]] = zt.slice_grad %{{.+}} [0:2, 8:12] : (tensor<2x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT: %[[G2:.+]] = zt.slice_grad %{{.+}} [0:2, 0:4] : (tensor<2x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT: %[[DW:.+]] = zt.add %[[G1]], %[[G2]] : tensor<2x12xf32>
// CHECK-NEXT: return %{{.+}}, %[[DW]]
func.func @slices_with_gap(%w: tensor<2x12xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %a = zt.slice %w [0:2, 0:4] : (tensor<2x12xf32>) -> tensor<2x4xf32>
  %c = zt.slice %w [0:2, 8:12] : (tensor<2x12xf32>) -> tensor<2x4xf32>
  %s = zt.add %a, %c : tensor<2x4xf32>
  %l = zt.sum %s, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// concat: each active input gets its part of the gradient; the input that
// does not depend on a parameter gets nothing.
// CHECK-LABEL: func.func @concat
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim %{{.+}} -> tensor<2x7xf32>
// CHECK-NEXT: %[[DW:.+]] = zt.slice %[[DY]] [0:2, 3:7] : (tensor<2x7xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: return %{{.+}}, %[[DW]]
func.func @concat(%x: tensor<2x3xf32> {zt.role = #zt.role<input>},
                  %w: tensor<2x4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %c = zt.concat(%x, %w) dim = 1 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>
  %l = zt.sum %c, dims = [0, 1] : (tensor<2x7xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// sum with keep_dims: broadcast over every dimension (the kept size-1 ones
// repeat); mean: scale the small gradient by 1/count, then broadcast.
// CHECK-LABEL: func.func @sum_mean
// CHECK: %[[ONE:.+]] = zt.constant dense<1.000000e+00>
// CHECK-NEXT: %[[D1:.+]] = zt.scale %[[ONE]], factor = 2.500000e-01 : tensor<f32>
// CHECK-NEXT: %[[D2:.+]] = zt.broadcast_in_dim %[[D1]], dims = [] : (tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT: %[[D3:.+]] = zt.reshape %[[D2]] : (tensor<4xf32>) -> tensor<4x1xf32>
// CHECK-NEXT: %[[DW:.+]] = zt.broadcast_in_dim %[[D3]], dims = [0, 1] : (tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %{{.+}}, %[[DW]]
func.func @sum_mean(%w: tensor<4x8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %s = zt.sum %w, dims = [1] {keep_dims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %r = zt.reshape %s : (tensor<4x1xf32>) -> tensor<4xf32>
  %l = zt.mean %r, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// max: the gradient goes to the first maximal element, recomputed from the
// operand.
// CHECK-LABEL: func.func @max
// CHECK-SAME: (%[[W:[a-z0-9]+]]:
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim %{{.+}} -> tensor<4xf32>
// CHECK-NEXT: %[[DW:.+]] = zt.max_grad %[[W]], %[[DY]], dims = [1] : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %{{.+}}, %[[DW]]
func.func @max(%w: tensor<4x8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %m = zt.max %w, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  %l = zt.sum %m, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// matmul: dA = dC B^T and dB = A^T dC, with transpose flags instead of
// materialised transposes.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:[a-z0-9]+]]: {{.+}}, %[[B:[a-z0-9]+]]:
// CHECK: %[[DC:.+]] = zt.broadcast_in_dim %{{.+}} -> tensor<4x2xf32>
// CHECK-NEXT: %[[DA:.+]] = zt.matmul %[[DC]], %[[B]] {transpose_rhs} : (tensor<4x2xf32>, tensor<8x2xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[DB:.+]] = zt.matmul %[[A]], %[[DC]] {transpose_lhs} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
// CHECK-NEXT: return %{{.+}}, %[[DA]], %[[DB]]
func.func @matmul(%a: tensor<4x8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                  %b: tensor<8x2xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %c = zt.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %l = zt.sum %c, dims = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// matmul with both transpose flags: C = A^T B^T, so dA = B^T dC^T and
// dB = dC^T A^T.
// CHECK-LABEL: func.func @matmul_transposed
// CHECK-SAME: (%[[A:[a-z0-9]+]]: {{.+}}, %[[B:[a-z0-9]+]]:
// CHECK: %[[DC:.+]] = zt.broadcast_in_dim %{{.+}} -> tensor<4x2xf32>
// CHECK-NEXT: %[[DA:.+]] = zt.matmul %[[B]], %[[DC]] {transpose_lhs, transpose_rhs} : (tensor<2x8xf32>, tensor<4x2xf32>) -> tensor<8x4xf32>
// CHECK-NEXT: %[[DB:.+]] = zt.matmul %[[DC]], %[[A]] {transpose_lhs, transpose_rhs} : (tensor<4x2xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: return %{{.+}}, %[[DA]], %[[DB]]
func.func @matmul_transposed(%a: tensor<8x4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                             %b: tensor<2x8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %c = zt.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<8x4xf32>, tensor<2x8xf32>) -> tensor<4x2xf32>
  %l = zt.sum %c, dims = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A rank-2 weight shared by every batch entry: its gradient sums over the
// batch, one product over the flattened rows. A transposed batched lhs is
// transposed explicitly first (a rank-2 lhs cannot carry the batch).
// CHECK-LABEL: func.func @matmul_shared_weight
// CHECK-SAME: (%[[A:[a-z0-9]+]]: {{.+}}, %[[B:[a-z0-9]+]]:
// CHECK: %[[DC:.+]] = zt.broadcast_in_dim %{{.+}} -> tensor<2x4x3xf32>
// CHECK-NEXT: %[[P:.+]] = zt.matmul %[[DC]], %[[B]] : (tensor<2x4x3xf32>, tensor<3x5xf32>) -> tensor<2x4x5xf32>
// CHECK-NEXT: %[[DA:.+]] = zt.transpose %[[P]], perm = [0, 2, 1] : (tensor<2x4x5xf32>) -> tensor<2x5x4xf32>
// CHECK-NEXT: %[[AT:.+]] = zt.transpose %[[A]], perm = [0, 2, 1] : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
// CHECK-NEXT: %[[A2:.+]] = zt.reshape %[[AT]] : (tensor<2x4x5xf32>) -> tensor<8x5xf32>
// CHECK-NEXT: %[[G2:.+]] = zt.reshape %[[DC]] : (tensor<2x4x3xf32>) -> tensor<8x3xf32>
// CHECK-NEXT: %[[DB:.+]] = zt.matmul %[[G2]], %[[A2]] {transpose_lhs} : (tensor<8x3xf32>, tensor<8x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: return %{{.+}}, %[[DA]], %[[DB]]
func.func @matmul_shared_weight(%a: tensor<2x5x4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                                %b: tensor<3x5xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %c = zt.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<2x5x4xf32>, tensor<3x5xf32>) -> tensor<2x4x3xf32>
  %l = zt.sum %c, dims = [0, 1, 2] : (tensor<2x4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// attention: one fused backward op from the forward's operands, its output
// and logsumexp (no probabilities saved); a constant key gets no gradient.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: {{.+}}, %[[K:[a-z0-9]+]]: {{.+}}, %[[V:[a-z0-9]+]]:
// CHECK: %[[Y:.+]], %[[LSE:.+]] = zt.attention %[[Q]], %[[K]], %[[V]], scale = 5.000000e-01 causal
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: %[[DQ:.+]], %{{.+}}, %[[DV:.+]] = zt.attention_grad %[[Q]], %[[K]], %[[V]], %[[Y]], %[[LSE]], %[[DY]], scale = 5.000000e-01 causal
// CHECK-NEXT: return %{{.+}}, %[[DQ]], %[[DV]]
func.func @attention(%q: tensor<2x5x4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                     %k: tensor<2x6x4xf32> {zt.role = #zt.role<input>},
                     %v: tensor<2x6x3xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %y, %lse = zt.attention %q, %k, %v, scale = 0.5 causal : (tensor<2x5x4xf32>, tensor<2x6x4xf32>, tensor<2x6x3xf32>) -> (tensor<2x5x3xf32>, tensor<2x5xf32>)
  %l = zt.sum %y, dims = [0, 1, 2] : (tensor<2x5x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// softmax and log_softmax read their results.
// CHECK-LABEL: func.func @softmaxes
// CHECK: %[[S:.+]] = zt.softmax %{{.+}}, axis = -1
// CHECK-NEXT: %[[LS:.+]] = zt.log_softmax %[[S]], axis = 0
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: %[[D1:.+]] = zt.log_softmax_grad %[[LS]], %[[DY]], axis = 0 : tensor<4x8xf32>
// CHECK-NEXT: %[[D0:.+]] = zt.softmax_grad %[[S]], %[[D1]], axis = -1 : tensor<4x8xf32>
// CHECK-NEXT: return %{{.+}}, %[[D0]]
func.func @softmaxes(%w: tensor<4x8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %s = zt.softmax %w, axis = -1 : tensor<4x8xf32>
  %ls = zt.log_softmax %s, axis = 0 : tensor<4x8xf32>
  %l = zt.sum %ls, dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// layer_norm: one fused backward op gives the operand's, gamma's and beta's
// gradients, recomputing the row statistics from the saved operand.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.+}}, %[[G:[a-z0-9]+]]: {{.+}}, %[[B:[a-z0-9]+]]:
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: %[[DX:.+]], %[[DG:.+]], %[[DB:.+]] = zt.layer_norm_grad %[[X]], %[[G]], %[[DY]], eps = 1.000000e-05
// CHECK-NEXT: return %{{.+}}, %[[DG]], %[[DB]]
func.func @layer_norm(%x: tensor<4x8xf32> {zt.role = #zt.role<input>},
                      %g: tensor<8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>},
                      %b: tensor<8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %y = zt.layer_norm %x, %g, %b, eps = 1.0e-5 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %l = zt.sum %y, dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// rms_norm: the operand's and gamma's gradients from one fused op.
// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.+}}, %[[G:[a-z0-9]+]]:
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: %[[DX:.+]], %[[DG:.+]] = zt.rms_norm_grad %[[X]], %[[G]], %[[DY]]
// CHECK-NEXT: return %{{.+}}, %[[DX]], %[[DG]]
func.func @rms_norm(%x: tensor<4x8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                    %g: tensor<8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>}) -> tensor<f32> {
  %y = zt.rms_norm %x, %g, eps = 1.0e-6 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %l = zt.sum %y, dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// embedding: rows scatter-added into a table-shaped gradient; the integer
// indices get none.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[IDS:[a-z0-9]+]]: {{.+}}, %[[T:[a-z0-9]+]]:
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim %{{.+}} -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[DT:.+]] = zt.embedding_grad %[[IDS]], %[[DY]] : (tensor<2x3xi32>, tensor<2x3x4xf32>) -> tensor<10x4xf32>
// CHECK-NEXT: return %{{.+}}, %[[DT]]
func.func @embedding(%ids: tensor<2x3xi32> {zt.role = #zt.role<input>},
                     %t: tensor<10x4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %e = zt.embedding %t, %ids : (tensor<10x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
  %l = zt.sum %e, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// softmax_cross_entropy: the loss's own gradient is the seed, 1.
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[Y:[a-z0-9]+]]: {{.+}}, %[[W:[a-z0-9]+]]:
// CHECK: %[[L:.+]] = zt.softmax_cross_entropy %[[W]], %[[Y]]
// CHECK-NEXT: %[[ONE:.+]] = zt.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[DW:.+]] = zt.softmax_cross_entropy_grad %[[W]], %[[Y]], %[[ONE]] : (tensor<4x10xf32>, tensor<4xi32>, tensor<f32>) -> tensor<4x10xf32>
// CHECK-NEXT: return %[[L]], %[[DW]]
func.func @cross_entropy(%y: tensor<4xi32> {zt.role = #zt.role<label>},
                         %w: tensor<4x10xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %l = zt.softmax_cross_entropy %w, %y : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// mse: the prediction's gradient from one fused op; a target that depends on
// a parameter gets its negation.
// CHECK-LABEL: func.func @mse
// CHECK-SAME: (%[[P:[a-z0-9]+]]: {{.+}}, %[[T:[a-z0-9]+]]:
// CHECK: %[[ONE:.+]] = zt.constant dense<1.000000e+00>
// CHECK-NEXT: %[[DP:.+]] = zt.mse_grad %[[P]], %[[T]], %[[ONE]]
// CHECK-NEXT: %[[DT:.+]] = zt.neg %[[DP]]
// CHECK-NEXT: return %{{.+}}, %[[DP]], %[[DT]]
func.func @mse(%p: tensor<4x1xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
               %t: tensor<4x1xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %l = zt.mse %p, %t : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// dropout: the backward is the same dropout (rate, seed, step) applied to the
// gradient; the mask is recomputed, so no mask tensor exists.
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[STEP:[a-z0-9]+]]: {{.+}}, %[[W:[a-z0-9]+]]:
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim
// CHECK-NEXT: %[[DW:.+]] = zt.dropout %[[DY]], %[[STEP]], rate = 2.500000e-01, seed = 9
// CHECK-NEXT: return %{{.+}}, %[[DW]]
func.func @dropout(%step: tensor<i64> {zt.role = #zt.role<step>},
                   %w: tensor<4x8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %d = zt.dropout %w, %step, rate = 0.25, seed = 9 : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  %l = zt.sum %d, dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Constants and the causal mask have no operands and get no gradient; the
// attention-score path through them differentiates the parameter only.
// CHECK-LABEL: func.func @constants
// CHECK-SAME: (%[[W:[a-z0-9]+]]:
// CHECK: %[[M:.+]] = zt.causal_mask : tensor<4x4xf32>
// CHECK: %[[SB:.+]] = zt.broadcast_in_dim %{{.+}}, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
// CHECK: %[[DY:.+]] = zt.broadcast_in_dim %{{.+}}, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[DW:.+]] = zt.mul %[[DY]], %[[SB]]
// CHECK-NEXT: return %{{.+}}, %[[DW]]
func.func @constants(%w: tensor<4x4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %m = zt.causal_mask : tensor<4x4xf32>
  %c = zt.constant dense<0.5> : tensor<f32>
  %cb = zt.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
  %s = zt.mul %w, %cb : tensor<4x4xf32>
  %y = zt.add %s, %m : tensor<4x4xf32>
  %l = zt.sum %y, dims = [0, 1] : (tensor<4x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A parameter the loss does not depend on gets a zero gradient, with a
// warning; forward code the loss does not use is removed.
// CHECK-LABEL: func.func @unused_parameter
// CHECK-NOT: zt.exp
// CHECK: %[[Z:.+]] = zt.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: return %{{.+}}, %{{.+}}, %[[Z]]
// expected-warning @+1 {{parameter 'unused' does not affect the loss; its gradient is zero}}
func.func @unused_parameter(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                            %u: tensor<3xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "unused"}) -> tensor<f32> {
  %dead = zt.exp %u : tensor<3xf32>
  %l = zt.sum %w, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
