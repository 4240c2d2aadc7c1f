// zt-fuse-classifier: the cross-entropy loss and its gradient of the same
// logits become one zt.softmax_cross_entropy_fused at the loss's place, the
// gradient's scale moved before it; the logits die there and the gradient
// is written over them.
// RUN: zt-opt %s -split-input-file -zt-autodiff -zt-fuse-classifier | FileCheck %s
// The first function through zt-plan-memory (the others are no entries):
// RUN: zt-opt %s -split-input-file -zt-autodiff -zt-fuse-classifier 2>&1 | sed '/^\/\/ -----/,$d' | zt-opt -zt-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: zt-opt %s -split-input-file -zt-autodiff -zt-fuse-classifier 2>&1 | sed '/^\/\/ -----/,$d' | zt-opt -zt-plan-memory | %python %S/../tools/check_zplan.py - | FileCheck %s --check-prefix=CHECKER
// Off, the two ops stay:
// RUN: zt-opt %s -split-input-file -zt-autodiff | FileCheck %s --check-prefix=OFF

// A classifier's step: zt-autodiff's seed (a constant after the forward)
// moves up, the fused op takes the loss's place and the forward grows by
// one op (the seed), so zt.backward_start counts 3 ops before the backward.
// CHECK-LABEL: func.func @classifier
// CHECK-SAME: zt.backward_start = 3
// CHECK: %[[LOGITS:.+]] = zt.matmul %arg0, %arg2
// CHECK-NEXT: %[[SEED:.+]] = zt.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[LOSS:.+]], %[[GRAD:.+]] = zt.softmax_cross_entropy_fused %[[LOGITS]], %arg1, %[[SEED]] {ignore_index = -100 : i64} : (tensor<16x40xf32>, tensor<16xi32>, tensor<f32>) -> (tensor<f32>, tensor<16x40xf32>)
// CHECK-NEXT: zt.matmul %arg0, %[[GRAD]] {transpose_lhs}
// CHECK-NOT: zt.softmax_cross_entropy_grad
// CHECK: return %[[LOSS]]
// OFF-LABEL: func.func @classifier
// OFF: zt.softmax_cross_entropy %
// OFF: zt.softmax_cross_entropy_grad
// The plan: one launch, its gradient in the logits' slot (no other arena
// value holds the gradient).
// PLAN-LABEL: zplan.entry @classifier
// PLAN: zplan.launch "matmul"(%{{.+}}, %{{.+}}) -> (%[[L:[0-9a-z_]+]])
// PLAN-NEXT: zplan.launch "constant"() -> (%[[S:[0-9a-z_]+]])
// PLAN-NEXT: zplan.launch "softmax_cross_entropy_fused"(%[[L]], %{{.+}}, %[[S]]) -> (%{{.+}}, %[[L]]) {ignore_index = -100 : i64}
// PLAN-NOT: softmax_cross_entropy_grad
// CHECKER: entry @classifier: {{.*}}: ok
func.func @classifier(%x: tensor<16x32xf32> {zt.role = #zt.role<input>, zt.name = "x"},
                      %y: tensor<16xi32> {zt.role = #zt.role<label>, zt.name = "y"},
                      %w: tensor<32x40xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "w"}) -> (tensor<f32> {zt.name = "loss"}) {
  %logits = zt.matmul %x, %w : (tensor<16x32xf32>, tensor<32x40xf32>) -> tensor<16x40xf32>
  %loss = zt.softmax_cross_entropy %logits, %y {ignore_index = -100 : i64} : (tensor<16x40xf32>, tensor<16xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Logits another op reads (here a sum added to the loss) would live past
// the loss anyway: the two ops stay.
// CHECK-LABEL: func.func @logits_read_again
// CHECK: zt.softmax_cross_entropy %
// CHECK: zt.softmax_cross_entropy_grad
// CHECK-NOT: zt.softmax_cross_entropy_fused
func.func @logits_read_again(%x: tensor<16x32xf32> {zt.role = #zt.role<input>, zt.name = "x"},
                             %y: tensor<16xi32> {zt.role = #zt.role<label>, zt.name = "y"},
                             %w: tensor<32x40xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "w"}) -> (tensor<f32> {zt.name = "loss"}) {
  %logits = zt.matmul %x, %w : (tensor<16x32xf32>, tensor<32x40xf32>) -> tensor<16x40xf32>
  %ce = zt.softmax_cross_entropy %logits, %y : (tensor<16x40xf32>, tensor<16xi32>) -> tensor<f32>
  %s = zt.sum %logits, dims = [0, 1] : (tensor<16x40xf32>) -> tensor<f32>
  %loss = zt.add %ce, %s : tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Two losses of the same logits: each pair's logits have other readers,
// so all four ops stay.
// CHECK-LABEL: func.func @two_losses
// CHECK: zt.softmax_cross_entropy %
// CHECK-SAME: label_smoothing = 1.000000e-01
// CHECK: zt.softmax_cross_entropy %
// CHECK: zt.softmax_cross_entropy_grad
// CHECK: zt.softmax_cross_entropy_grad
// CHECK-NOT: zt.softmax_cross_entropy_fused
func.func @two_losses(%x: tensor<16x32xf32> {zt.role = #zt.role<input>, zt.name = "x"},
                      %y: tensor<16xi64> {zt.role = #zt.role<label>, zt.name = "y"},
                      %w: tensor<32x40xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "w"}) -> (tensor<f32> {zt.name = "loss"}) {
  %logits = zt.matmul %x, %w : (tensor<16x32xf32>, tensor<32x40xf32>) -> tensor<16x40xf32>
  %a = zt.softmax_cross_entropy %logits, %y {label_smoothing = 0.1 : f64} : (tensor<16x40xf32>, tensor<16xi64>) -> tensor<f32>
  %b = zt.softmax_cross_entropy %logits, %y : (tensor<16x40xf32>, tensor<16xi64>) -> tensor<f32>
  %loss = zt.add %a, %b : tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Written by hand (no step: zt-autodiff leaves it alone). The gradient's
// scale computed after the loss from a constant moves up with it; the
// attributes stay; bf16 logits give an f32 loss.
// CHECK-LABEL: func.func @scaled_seed
// CHECK-NEXT: %[[C:.+]] = zt.constant
// CHECK-NEXT: %[[S:.+]] = zt.scale %[[C]], factor = 2.500000e-01
// CHECK-NEXT: %[[L:.+]], %[[G:.+]] = zt.softmax_cross_entropy_fused %arg0, %arg1, %[[S]] {label_smoothing = 1.000000e-01 : f64} : (tensor<4x5xbf16>, tensor<4xi32>, tensor<f32>) -> (tensor<f32>, tensor<4x5xbf16>)
// CHECK-NEXT: return %[[L]], %[[G]]
func.func @scaled_seed(%x: tensor<4x5xbf16>, %y: tensor<4xi32>) -> (tensor<f32>, tensor<4x5xbf16>) {
  %l = zt.softmax_cross_entropy %x, %y {label_smoothing = 0.1 : f64} : (tensor<4x5xbf16>, tensor<4xi32>) -> tensor<f32>
  %c = zt.constant dense<1.0> : tensor<f32>
  %s = zt.scale %c, factor = 0.25 : tensor<f32>
  %g = zt.softmax_cross_entropy_grad %x, %y, %s {label_smoothing = 0.1 : f64} : (tensor<4x5xbf16>, tensor<4xi32>, tensor<f32>) -> tensor<4x5xbf16>
  return %l, %g : tensor<f32>, tensor<4x5xbf16>
}

// -----

// A scale computed from the loss itself is not known before it: no fusion.
// So for attributes that differ between the two.
// CHECK-LABEL: func.func @scale_from_loss
// CHECK-NOT: zt.softmax_cross_entropy_fused
// CHECK-LABEL: func.func @other_attributes
// CHECK-NOT: zt.softmax_cross_entropy_fused
// CHECK: return
func.func @scale_from_loss(%x: tensor<4x5xf32>, %y: tensor<4xi32>) -> (tensor<f32>, tensor<4x5xf32>) {
  %l = zt.softmax_cross_entropy %x, %y : (tensor<4x5xf32>, tensor<4xi32>) -> tensor<f32>
  %s = zt.scale %l, factor = 2.0 : tensor<f32>
  %g = zt.softmax_cross_entropy_grad %x, %y, %s : (tensor<4x5xf32>, tensor<4xi32>, tensor<f32>) -> tensor<4x5xf32>
  return %l, %g : tensor<f32>, tensor<4x5xf32>
}
func.func @other_attributes(%x: tensor<4x5xf32>, %y: tensor<4xi32>, %s: tensor<f32>) -> (tensor<f32>, tensor<4x5xf32>) {
  %l = zt.softmax_cross_entropy %x, %y {ignore_index = -100 : i64} : (tensor<4x5xf32>, tensor<4xi32>) -> tensor<f32>
  %g = zt.softmax_cross_entropy_grad %x, %y, %s : (tensor<4x5xf32>, tensor<4xi32>, tensor<f32>) -> tensor<4x5xf32>
  return %l, %g : tensor<f32>, tensor<4x5xf32>
}
