// Attention views: the slices, reshapes and transposes that take the heads
// out of a fused q/k/v projection are strided views of the projection's
// slot (no launch, no slot), and attention's result is written through
// strides where its transpose lives (that transpose has no launch either).
// The gradients attention_grad writes and a concat joins (the fused
// projection's gradient) are written where the concat puts them, so the
// concat has no launch either. A transpose another kernel reads stays a
// launch; attention-views=false copies as before.
// RUN: zt-opt %s -split-input-file -zt-plan-memory | FileCheck %s
// RUN: zt-opt %s -split-input-file -zt-plan-memory | %python %S/../tools/check_zplan.py - | FileCheck %s --check-prefix=CHECKER
// RUN: zt-opt %s -split-input-file -zt-plan-memory=attention-views=false | FileCheck %s --check-prefix=COPIES
// Only the views a launch reads or writes are made (none on the way to them).
// RUN: zt-opt %s -split-input-file -zt-plan-memory | FileCheck %s --check-prefix=ONLY
// ONLY-NOT: strided_view {{.*}} to memref<2x16x{{(16|2x8)}}xf32>

// CHECK-LABEL: zplan.entry @fused_projection
// CHECK-DAG: %[[QKV:.+]] = zplan.slot input {{.*}} name = "qkv"
// CHECK-DAG: %[[Y:.+]] = zplan.slot arena {{.*}} : memref<2x2x16x8xf32>
// CHECK-DAG: %[[Q:.+]] = zplan.strided_view %[[QKV]] offset = 0 strides = [768, 8, 48, 1] : memref<2x16x48xf32> to memref<2x2x16x8xf32>
// CHECK-DAG: %[[K:.+]] = zplan.strided_view %[[QKV]] offset = 16 strides = [768, 8, 48, 1] : memref<2x16x48xf32> to memref<2x2x16x8xf32>
// CHECK-DAG: %[[V:.+]] = zplan.strided_view %[[QKV]] offset = 32 strides = [768, 8, 48, 1] : memref<2x16x48xf32> to memref<2x2x16x8xf32>
// CHECK-DAG: %[[YV:.+]] = zplan.strided_view %[[Y]] offset = 0 strides = [256, 8, 16, 1] : memref<2x2x16x8xf32> to memref<2x2x16x8xf32>
// CHECK: zplan.launch "attention"(%[[Q]], %[[K]], %[[V]]) -> (%[[YV]], %{{.+}})
// The transposed result is the slot itself, read row-major.
// CHECK: %[[Z:.+]] = zplan.view %[[Y]] : memref<2x2x16x8xf32> to memref<2x16x2x8xf32>
// CHECK-NOT: zplan.launch "slice"
// CHECK-NOT: zplan.launch "transpose"
// CHECKER: entry @fused_projection: {{.*}}: ok
// COPIES-LABEL: zplan.entry @fused_projection
// COPIES-COUNT-3: zplan.launch "slice"
// COPIES-NOT: zplan.strided_view
// COPIES-COUNT-4: zplan.launch "transpose"
func.func @fused_projection(%qkv: tensor<2x16x48xf32> {zt.role = #zt.role<input>, zt.name = "qkv"}) -> (tensor<2x16x16xf32> {zt.name = "out"}) attributes {zt.entry = "predict"} {
  %q = zt.slice %qkv [0:2, 0:16, 0:16] : (tensor<2x16x48xf32>) -> tensor<2x16x16xf32>
  %qs = zt.reshape %q : (tensor<2x16x16xf32>) -> tensor<2x16x2x8xf32>
  %qh = zt.transpose %qs, perm = [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %k = zt.slice %qkv [0:2, 0:16, 16:32] : (tensor<2x16x48xf32>) -> tensor<2x16x16xf32>
  %ks = zt.reshape %k : (tensor<2x16x16xf32>) -> tensor<2x16x2x8xf32>
  %kh = zt.transpose %ks, perm = [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %v = zt.slice %qkv [0:2, 0:16, 32:48] : (tensor<2x16x48xf32>) -> tensor<2x16x16xf32>
  %vs = zt.reshape %v : (tensor<2x16x16xf32>) -> tensor<2x16x2x8xf32>
  %vh = zt.transpose %vs, perm = [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %y, %lse = zt.attention %qh, %kh, %vh, scale = 0.35 causal : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x16xf32>)
  %z = zt.transpose %y, perm = [0, 2, 1, 3] : (tensor<2x2x16x8xf32>) -> tensor<2x16x2x8xf32>
  %m = zt.reshape %z : (tensor<2x16x2x8xf32>) -> tensor<2x16x16xf32>
  %out = zt.tanh %m : tensor<2x16x16xf32>
  return %out : tensor<2x16x16xf32>
}

// -----

// CHECK-LABEL: zplan.entry @kept
// The query heads are also summed: their slice and transpose are copies;
// the keys and values are still views. The result is returned as it is:
// written row-major.
// CHECK: zplan.launch "slice"
// CHECK: zplan.launch "transpose"
// CHECK-NOT: zplan.launch "slice"
// CHECK-NOT: zplan.launch "transpose"
// CHECK: zplan.launch "attention"
// CHECK-NOT: zplan.launch "transpose"
// CHECKER: entry @kept: {{.*}}: ok
func.func @kept(%qkv: tensor<2x16x48xf32> {zt.role = #zt.role<input>, zt.name = "qkv"}) -> (tensor<2x2x16x8xf32> {zt.name = "out"}, tensor<f32> {zt.name = "qsum"}) attributes {zt.entry = "predict"} {
  %q = zt.slice %qkv [0:2, 0:16, 0:16] : (tensor<2x16x48xf32>) -> tensor<2x16x16xf32>
  %qs = zt.reshape %q : (tensor<2x16x16xf32>) -> tensor<2x16x2x8xf32>
  %qh = zt.transpose %qs, perm = [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %qsum = zt.sum %qh, dims = [0, 1, 2, 3] : (tensor<2x2x16x8xf32>) -> tensor<f32>
  %k = zt.slice %qkv [0:2, 0:16, 16:32] : (tensor<2x16x48xf32>) -> tensor<2x16x16xf32>
  %ks = zt.reshape %k : (tensor<2x16x16xf32>) -> tensor<2x16x2x8xf32>
  %kh = zt.transpose %ks, perm = [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %v = zt.slice %qkv [0:2, 0:16, 32:48] : (tensor<2x16x48xf32>) -> tensor<2x16x16xf32>
  %vs = zt.reshape %v : (tensor<2x16x16xf32>) -> tensor<2x16x2x8xf32>
  %vh = zt.transpose %vs, perm = [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %y, %lse = zt.attention %qh, %kh, %vh, scale = 0.35 : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x16xf32>)
  return %y, %qsum : tensor<2x2x16x8xf32>, tensor<f32>
}

// -----

// q, k and v's gradients go back into the fused projection's gradient:
// attention_grad writes each through the steps the forward read its
// operand with, at its offset in the concat's slot; the transposes,
// reshapes and the concat have no launch, and the concat's reader reads
// the slot. The checker finds the three outputs of one launch in one slot
// and checks that they share no element.
// CHECK-LABEL: zplan.entry @gradients_concat
// CHECK-DAG: %[[G:.+]] = zplan.slot arena {{.*}} : memref<2x16x48xf32>
// CHECK-DAG: %[[DQ:.+]] = zplan.strided_view %[[G]] offset = 0 strides = [768, 8, 48, 1] : memref<2x16x48xf32> to memref<2x2x16x8xf32>
// CHECK-DAG: %[[DK:.+]] = zplan.strided_view %[[G]] offset = 16 strides = [768, 8, 48, 1] : memref<2x16x48xf32> to memref<2x2x16x8xf32>
// CHECK-DAG: %[[DV:.+]] = zplan.strided_view %[[G]] offset = 32 strides = [768, 8, 48, 1] : memref<2x16x48xf32> to memref<2x2x16x8xf32>
// CHECK: zplan.launch "attention_grad"({{.*}}) -> (%[[DQ]], %[[DK]], %[[DV]])
// CHECK-NEXT: zplan.launch "tanh"(%[[G]])
// CHECK-NOT: zplan.launch "concat"
// CHECKER: entry @gradients_concat: {{.*}}: ok
// COPIES-LABEL: zplan.entry @gradients_concat
// COPIES: zplan.launch "concat"
func.func @gradients_concat(%qkv: tensor<2x16x48xf32> {zt.role = #zt.role<input>, zt.name = "qkv"},
                            %dy: tensor<2x2x16x8xf32> {zt.role = #zt.role<input>, zt.name = "dy"}) -> (tensor<2x16x48xf32> {zt.name = "out"}) attributes {zt.entry = "predict"} {
  %q = zt.slice %qkv [0:2, 0:16, 0:16] : (tensor<2x16x48xf32>) -> tensor<2x16x16xf32>
  %qs = zt.reshape %q : (tensor<2x16x16xf32>) -> tensor<2x16x2x8xf32>
  %qh = zt.transpose %qs, perm = [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %k = zt.slice %qkv [0:2, 0:16, 16:32] : (tensor<2x16x48xf32>) -> tensor<2x16x16xf32>
  %ks = zt.reshape %k : (tensor<2x16x16xf32>) -> tensor<2x16x2x8xf32>
  %kh = zt.transpose %ks, perm = [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %v = zt.slice %qkv [0:2, 0:16, 32:48] : (tensor<2x16x48xf32>) -> tensor<2x16x16xf32>
  %vs = zt.reshape %v : (tensor<2x16x16xf32>) -> tensor<2x16x2x8xf32>
  %vh = zt.transpose %vs, perm = [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %y, %lse = zt.attention %qh, %kh, %vh, scale = 0.35 causal : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x16xf32>)
  %dq, %dk, %dv = zt.attention_grad %qh, %kh, %vh, %y, %lse, %dy, scale = 0.35 causal : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16xf32>, tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>)
  %tv = zt.transpose %dv, perm = [0, 2, 1, 3] : (tensor<2x2x16x8xf32>) -> tensor<2x16x2x8xf32>
  %rv = zt.reshape %tv : (tensor<2x16x2x8xf32>) -> tensor<2x16x16xf32>
  %tk = zt.transpose %dk, perm = [0, 2, 1, 3] : (tensor<2x2x16x8xf32>) -> tensor<2x16x2x8xf32>
  %rk = zt.reshape %tk : (tensor<2x16x2x8xf32>) -> tensor<2x16x16xf32>
  %tq = zt.transpose %dq, perm = [0, 2, 1, 3] : (tensor<2x2x16x8xf32>) -> tensor<2x16x2x8xf32>
  %rq = zt.reshape %tq : (tensor<2x16x2x8xf32>) -> tensor<2x16x16xf32>
  %g = zt.concat(%rq, %rk, %rv) dim = 2 : (tensor<2x16x16xf32>, tensor<2x16x16xf32>, tensor<2x16x16xf32>) -> tensor<2x16x48xf32>
  %out = zt.tanh %g : tensor<2x16x48xf32>
  return %out : tensor<2x16x48xf32>
}

// -----

// A concat of one gradient and another value stays a launch (only results
// of one attention op share its slot); the gradients are written through
// their transposes' steps as before.
// CHECK-LABEL: zplan.entry @mixed_concat
// CHECK: zplan.launch "attention_grad"
// CHECK-NOT: zplan.launch "transpose"
// CHECK: zplan.launch "concat"
// CHECKER: entry @mixed_concat: {{.*}}: ok
func.func @mixed_concat(%qkv: tensor<2x16x48xf32> {zt.role = #zt.role<input>, zt.name = "qkv"},
                        %dy: tensor<2x2x16x8xf32> {zt.role = #zt.role<input>, zt.name = "dy"},
                        %other: tensor<2x16x16xf32> {zt.role = #zt.role<input>, zt.name = "other"}) -> (tensor<2x16x32xf32> {zt.name = "out"}) attributes {zt.entry = "predict"} {
  %q = zt.slice %qkv [0:2, 0:16, 0:16] : (tensor<2x16x48xf32>) -> tensor<2x16x16xf32>
  %qs = zt.reshape %q : (tensor<2x16x16xf32>) -> tensor<2x16x2x8xf32>
  %qh = zt.transpose %qs, perm = [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %k = zt.slice %qkv [0:2, 0:16, 16:32] : (tensor<2x16x48xf32>) -> tensor<2x16x16xf32>
  %ks = zt.reshape %k : (tensor<2x16x16xf32>) -> tensor<2x16x2x8xf32>
  %kh = zt.transpose %ks, perm = [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %v = zt.slice %qkv [0:2, 0:16, 32:48] : (tensor<2x16x48xf32>) -> tensor<2x16x16xf32>
  %vs = zt.reshape %v : (tensor<2x16x16xf32>) -> tensor<2x16x2x8xf32>
  %vh = zt.transpose %vs, perm = [0, 2, 1, 3] : (tensor<2x16x2x8xf32>) -> tensor<2x2x16x8xf32>
  %y, %lse = zt.attention %qh, %kh, %vh, scale = 0.35 causal : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x16xf32>)
  %dq, %dk, %dv = zt.attention_grad %qh, %kh, %vh, %y, %lse, %dy, scale = 0.35 causal : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16xf32>, tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>)
  %tq = zt.transpose %dq, perm = [0, 2, 1, 3] : (tensor<2x2x16x8xf32>) -> tensor<2x16x2x8xf32>
  %rq = zt.reshape %tq : (tensor<2x16x2x8xf32>) -> tensor<2x16x16xf32>
  %g = zt.concat(%rq, %other) dim = 2 : (tensor<2x16x16xf32>, tensor<2x16x16xf32>) -> tensor<2x16x32xf32>
  %out = zt.tanh %g : tensor<2x16x32xf32>
  return %out : tensor<2x16x32xf32>
}
