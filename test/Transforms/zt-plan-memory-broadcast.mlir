// Broadcasts read through strides: a zt.broadcast_in_dim whose users are all
// element kernels gets no slot and no launch; it becomes a
// zplan.broadcast_view of its operand (stride 0 along repeated dimensions),
// which keeps its operand alive until its last reader. A broadcast that a
// non-element kernel reads, one that only reshapes (as many elements), and
// one the step returns stay launches with slots of their own.
// RUN: zt-opt %s -split-input-file -zt-plan-memory | FileCheck %s
// RUN: zt-opt %s -split-input-file -zt-plan-memory | %python %S/../tools/check_zplan.py - | FileCheck %s --check-prefix=CHECKER

// CHECK-LABEL: zplan.entry @bias_and_scalar
// The bias (a persistent slot) and the scalar constant are read in place.
// CHECK-DAG: %[[B:.+]] = zplan.slot persistent {{.*}} name = "b"
// CHECK-DAG: %[[S:.+]] = zplan.slot arena offset = {{[0-9]+}} size = 4 {{.*}} : memref<f32>
// CHECK: %[[BV:.+]] = zplan.broadcast_view %[[B]] strides = [0, 1] : memref<64xf32> to memref<32x64xf32>
// CHECK-NEXT: zplan.launch "add"(%{{.+}}, %[[BV]])
// CHECK: %[[SV:.+]] = zplan.broadcast_view %[[S]] strides = [0, 0] : memref<f32> to memref<32x64xf32>
// CHECK-NEXT: zplan.launch "mul"(%{{.+}}, %[[SV]])
// CHECK-NOT: zplan.launch "broadcast_in_dim"
// CHECKER: entry @bias_and_scalar: 2 arena slots, {{.*}}: ok
func.func @bias_and_scalar(%x: tensor<32x64xf32> {zt.role = #zt.role<input>, zt.name = "x"},
                           %b: tensor<64xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "b"}) -> (tensor<f32> {zt.name = "loss"}) attributes {zt.entry = "train_step"} {
  %bb = zt.broadcast_in_dim %b, dims = [1] : (tensor<64xf32>) -> tensor<32x64xf32>
  %y = zt.add %x, %bb : tensor<32x64xf32>
  %h = zt.constant dense<0.5> : tensor<f32>
  %hb = zt.broadcast_in_dim %h, dims = [] : (tensor<f32>) -> tensor<32x64xf32>
  %z = zt.mul %y, %hb : tensor<32x64xf32>
  %l = zt.sum %z, dims = [0, 1] : (tensor<32x64xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// CHECK-LABEL: zplan.entry @kept
// A reduction reads the first broadcast: materialized.
// CHECK: zplan.launch "broadcast_in_dim"(%{{.+}}) -> (%{{.+}}) {broadcast_dimensions = array<i64: 1>} : (memref<64xf32>) -> (memref<32x64xf32>)
// As many elements (a reshape): a copy.
// CHECK: zplan.launch "broadcast_in_dim"(%{{.+}}) -> (%{{.+}}) {broadcast_dimensions = array<i64: 1>} : (memref<64xf32>) -> (memref<1x64xf32>)
// CHECK-NOT: zplan.broadcast_view
// CHECKER: entry @kept: {{.*}}: ok
func.func @kept(%b: tensor<64xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "b"}) -> (tensor<f32> {zt.name = "loss"}, tensor<1x64xf32> {zt.name = "row"}) attributes {zt.entry = "train_step"} {
  %bb = zt.broadcast_in_dim %b, dims = [1] : (tensor<64xf32>) -> tensor<32x64xf32>
  %l = zt.sum %bb, dims = [0, 1] : (tensor<32x64xf32>) -> tensor<f32>
  %row = zt.broadcast_in_dim %b, dims = [1] : (tensor<64xf32>) -> tensor<1x64xf32>
  %r = zt.exp %row : tensor<1x64xf32>
  return %l, %r : tensor<f32>, tensor<1x64xf32>
}
