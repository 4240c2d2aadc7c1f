// The zt-liveness analysis printed by its test pass: each buffer's kind and
// [first, last) interval over op positions, the schedule, and where each
// result ends up.
// RUN: zt-opt %s -split-input-file -zt-print-liveness -o /dev/null | FileCheck %s

// A view shares its source's buffer: the reshape's use at position 2 extends
// the matmul result's interval to [0, 3); the view itself defines nothing.
// CHECK-LABEL: zt-print-liveness @view: 3 ops, 1 arena buffers, peak 32 live arena bytes
// CHECK: #0 input "x" 128 bytes
// CHECK-NEXT: #1 persistent "w" 64 bytes
// CHECK-NEXT: #2 arena [0, 3) 32 bytes: zt.matmul at 0
// CHECK-NEXT: #3 output "loss" 4 bytes: zt.sum at 2
// CHECK: 0 zt.matmul (#0, #1) -> (#2)
// CHECK-NEXT: 1 zt.reshape (#2) -> (#2)
// CHECK-NEXT: 2 zt.sum (#2) -> (#3)
// CHECK-NEXT: 3 return
// CHECK: #0 "loss" in #3
func.func @view(%x: tensor<4x8xf32> {zt.role = #zt.role<input>, zt.name = "x"},
                %w: tensor<8x2xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "w"})
    -> (tensor<f32> {zt.name = "loss"}) attributes {zt.entry = "train_step"} {
  %y = zt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %r = zt.reshape %y : (tensor<4x2xf32>) -> tensor<8xf32>
  %l = zt.sum %r, dims = [0] : (tensor<8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A value saved for the backward lives until its last backward use, however
// many same-sized values the forward makes in between: %a (position 1) is
// read by relu_grad at position 5, so its buffer lives to 6 and neither exp
// may use it. %a itself is computed in place over %z, which dies at the relu
// (an elementwise kernel reads each element before writing it); %c likewise
// over %b, but %b's exp cannot write over %a, which is still saved.
// CHECK-LABEL: zt-print-liveness @saved: 6 ops, 2 arena buffers
// CHECK: #2 arena [0, 6) 128 bytes: zt.mul at 0
// CHECK-NEXT: #3 arena [2, 6) 128 bytes: zt.exp at 2
// CHECK: 1 zt.relu (#2) -> (#2)
// CHECK-NEXT: 2 zt.exp (#2) -> (#3)
// CHECK-NEXT: 3 zt.exp (#3) -> (#3)
// CHECK: 5 zt.relu_grad (#2, #3)
func.func @saved(%x: tensor<32xf32> {zt.role = #zt.role<input>, zt.name = "x"},
                 %w: tensor<32xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "w"})
    -> (tensor<f32> {zt.name = "loss"}, tensor<32xf32> {zt.name = "dz"}) attributes {zt.entry = "train_step"} {
  %z = zt.mul %x, %w : tensor<32xf32>
  %a = zt.relu %z : tensor<32xf32>
  %b = zt.exp %a : tensor<32xf32>
  %c = zt.exp %b : tensor<32xf32>
  %l = zt.sum %c, dims = [0] : (tensor<32xf32>) -> tensor<f32>
  %dz = zt.relu_grad %a, %c : tensor<32xf32>
  return %l, %dz : tensor<f32>, tensor<32xf32>
}

// -----

// A tied update is computed in the persistent slot it overwrites when the
// old value's last read is the update itself (an elementwise op): no arena
// buffer for the new parameter, no copy.
// CHECK-LABEL: zt-print-liveness @in_place
// CHECK: #0 persistent "w" 32 bytes
// CHECK: 1 zt.sgd (#0, #{{[0-9]+}}) -> (#0)
// CHECK: #1 "w" in #0
// CHECK-NOT: copied
func.func @in_place(%w: tensor<8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "w"})
    -> (tensor<f32> {zt.name = "loss"}, tensor<8xf32> {zt.tied = 0 : i64, zt.name = "w"}) attributes {zt.entry = "train_step"} {
  %l = zt.sum %w, dims = [0] : (tensor<8xf32>) -> tensor<f32>
  %n = zt.sgd %w, %w {lr = 0.1 : f64} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %l, %n : tensor<f32>, tensor<8xf32>
}

// -----

// When the old value is still read after the update (position 2 reads %w
// after the sgd at 1), writing in place would corrupt that read: the new
// value gets an arena buffer live to the return, and is copied there.
// CHECK-LABEL: zt-print-liveness @read_after_update
// CHECK: #0 persistent "w" 32 bytes
// CHECK: #[[NEW:[0-9]+]] arena [1, 4) 32 bytes: zt.sgd at 1
// CHECK: 2 zt.sum (#0) -> (#{{[0-9]+}})
// CHECK: #1 "w" in #0, copied from #[[NEW]] at the return
func.func @read_after_update(%w: tensor<8xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "w"})
    -> (tensor<f32> {zt.name = "loss"}, tensor<8xf32> {zt.tied = 0 : i64, zt.name = "w"}, tensor<f32> {zt.name = "late"}) attributes {zt.entry = "train_step"} {
  %l = zt.sum %w, dims = [0] : (tensor<8xf32>) -> tensor<f32>
  %n = zt.sgd %w, %w {lr = 0.1 : f64} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %late = zt.sum %w, dims = [0] : (tensor<8xf32>) -> tensor<f32>
  return %l, %n, %late : tensor<f32>, tensor<8xf32>, tensor<f32>
}

// -----

// Outputs: a value computed straight into its slot; a value returned twice
// (the second copy), an argument and a view returned (copies at the
// return, position 2); a non-splat constant is plan data.
// CHECK-LABEL: zt-print-liveness @outputs
// CHECK: #0 input "x" 16 bytes
// CHECK-NEXT: #1 output "a" 16 bytes: zt.exp at 0
// CHECK-NEXT: #2 constant 16 bytes: zt.constant at 1
// CHECK-NEXT: #3 output "b" 16 bytes
// CHECK-NEXT: #4 output "c" 16 bytes
// CHECK-NEXT: #5 output "d" 16 bytes
// CHECK: #0 "a" in #1
// CHECK-NEXT: #1 "b" in #3, copied from #1 at the return
// CHECK-NEXT: #2 "c" in #4, copied from #0 at the return
// CHECK-NEXT: #3 "d" in #5, copied from #2 at the return
func.func @outputs(%x: tensor<4xf32> {zt.role = #zt.role<input>, zt.name = "x"})
    -> (tensor<4xf32> {zt.name = "a"}, tensor<4xf32> {zt.name = "b"}, tensor<4xf32> {zt.name = "c"}, tensor<2x2xf32> {zt.name = "d"})
    attributes {zt.entry = "train_step"} {
  %a = zt.exp %x : tensor<4xf32>
  %k = zt.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %v = zt.reshape %k : (tensor<4xf32>) -> tensor<2x2xf32>
  return %a, %a, %x, %v : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>
}
