// zt-plan-memory, written like IREE's layout tests: each value's lifetime
// [first, last) over op positions and its expected arena offset are stated
// inline; the CHECK lines hold the pass to them. Alignment is 256 bytes.
// Results written in place over dying operands are off here, so that each
// value is its own slot (zt-plan-memory-in-place.mlir tests them).
// RUN: zt-opt %s -split-input-file -zt-plan-memory=in-place=false | FileCheck %s
// RUN: zt-opt %s -split-input-file -zt-plan-memory=in-place=false | %python %S/../tools/check_zplan.py - | FileCheck %s --check-prefix=CHECKER

// A chain where one value (%a) is kept for a later use: bytes are reused
// only by values whose lifetimes do not meet.
//   pos  value  lifetime  bytes  offset
//   0    %a     [0, 4)    1024   0        (read again at 3)
//   1    %b     [1, 3)    1024   1024
//   2    %c     [2, 4)    1024   2048     (%a and %b are still live)
//   3    %d     [3, 5)    1024   1024     (%b died at 3)
//   4    %e     [4, 6)    1024   0        (%a died at 4)
//   5    %f     output slot, written in place of an arena buffer
// Peak: %a, %b, %c at 2 = 3072 bytes, so the plan is optimal.
// CHECK-LABEL: zplan.entry @chain kind = train_step arena = 3072 lower_bound = 3072 no_reuse = 5120
// CHECK-NEXT: %[[X:.+]] = zplan.slot input offset = 0 size = 1024 name = "x" role = input : memref<256xf32>
// CHECK-NEXT: %[[A:.+]] = zplan.slot arena offset = 0 size = 1024 live = [0, 4] name = "a"
// CHECK-NEXT: %[[B:.+]] = zplan.slot arena offset = 1024 size = 1024 live = [1, 3] name = "b"
// CHECK-NEXT: %[[C:.+]] = zplan.slot arena offset = 2048 size = 1024 live = [2, 4] name = "c"
// CHECK-NEXT: %[[D:.+]] = zplan.slot arena offset = 1024 size = 1024 live = [3, 5] name = "d"
// CHECK-NEXT: %[[E:.+]] = zplan.slot arena offset = 0 size = 1024 live = [4, 6] name = "e"
// CHECK-NEXT: %[[F:.+]] = zplan.slot output offset = 0 size = 1024 name = "out" role = loss
// CHECK-NEXT: zplan.launch "exp"(%[[X]]) -> (%[[A]])
// CHECK-NEXT: zplan.launch "exp"(%[[A]]) -> (%[[B]])
// CHECK-NEXT: zplan.launch "exp"(%[[B]]) -> (%[[C]])
// CHECK-NEXT: zplan.launch "add"(%[[A]], %[[C]]) -> (%[[D]])
// CHECK-NEXT: zplan.launch "exp"(%[[D]]) -> (%[[E]])
// CHECK-NEXT: zplan.launch "exp"(%[[E]]) -> (%[[F]])
// CHECKER: entry @chain: 5 arena slots, arena 3072, lower bound 3072, no reuse 5120: ok
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

// Mixed sizes and a view: the reshape %flat shares %big2's slot (a
// zplan.view), and its use at 5 extends %big2's lifetime to [3, 6).
//   pos  value   lifetime  bytes  offset
//   0    %big    [0, 2)    4096   0
//   1    %row    [1, 3)    256    4096
//   2    %small  [2, 4)    256    4352
//   3    %big2   [3, 6)    4096   0        (%big died at 2)
//   4    %flat   view of %big2
//   5    %tail   [5, 7)    4096   4096     (%row and %small died)
// CHECK-LABEL: zplan.entry @mixed kind = train_step arena = 8192 lower_bound = 8192 no_reuse = 12800
// CHECK: zplan.slot arena offset = 0 size = 4096 live = [0, 2] name = "big" : memref<64x16xf32>
// CHECK-NEXT: zplan.slot arena offset = 4096 size = 256 live = [1, 3] name = "row" : memref<64xf32>
// CHECK-NEXT: zplan.slot arena offset = 4352 size = 256 live = [2, 4] name = "small" : memref<64xf32>
// CHECK-NEXT: %[[BIG2:.+]] = zplan.slot arena offset = 0 size = 4096 live = [3, 6] name = "big2" : memref<64x16xf32>
// CHECK-NEXT: %[[TAIL:.+]] = zplan.slot arena offset = 4096 size = 4096 live = [5, 7] name = "tail" : memref<1024xf32>
// CHECK: %[[FLAT:.+]] = zplan.view %[[BIG2]] : memref<64x16xf32> to memref<1024xf32>
// CHECK-NEXT: zplan.launch "exp"(%[[FLAT]]) -> (%[[TAIL]])
// CHECKER: entry @mixed: 5 arena slots, arena 8192, lower bound 8192, no reuse 12800: ok
func.func @mixed(%x: tensor<64x16xf32> {zt.role = #zt.role<input>, zt.name = "x"})
    -> (tensor<f32> {zt.name = "out"}) attributes {zt.entry = "train_step"} {
  %big = zt.exp %x : tensor<64x16xf32> loc("big")
  %row = zt.sum %big, dims = [1] : (tensor<64x16xf32>) -> tensor<64xf32> loc("row")
  %small = zt.exp %row : tensor<64xf32> loc("small")
  %big2 = zt.broadcast_in_dim %small, dims = [0] : (tensor<64xf32>) -> tensor<64x16xf32> loc("big2")
  %flat = zt.reshape %big2 : (tensor<64x16xf32>) -> tensor<1024xf32> loc("flat")
  %tail = zt.exp %flat : tensor<1024xf32> loc("tail")
  %s = zt.sum %tail, dims = [0] : (tensor<1024xf32>) -> tensor<f32> loc("s")
  return %s : tensor<f32>
}

// -----

// Persistent tensors: a parameter updated in place (the sgd writes its own
// slot, no arena bytes), a non-splat constant carried as plan data, and a
// copy at the return for an update whose parameter is read afterwards. The
// arena is 16 bytes: offset + size of its one slot. A launch states every
// attribute of its op, defaults included (the runtime has none of its own),
// and no discardable attribute.
// CHECK: module attributes {zplan.alignment = 256 : i64, zplan.arena_size = 16 : i64, zplan.constant_size = 256 : i64, zplan.persistent_size = 512 : i64}
// CHECK-LABEL: zplan.entry @persistent kind = train_step
// CHECK: %[[W:.+]] = zplan.slot persistent offset = 0 size = 16 name = "w" {init = #zt.init<ones>} : memref<4xf32>
// CHECK-NEXT: %[[V:.+]] = zplan.slot persistent offset = 256 size = 16 name = "v" {init = #zt.init<zeros>} : memref<4xf32>
// CHECK-NEXT: %[[K:.+]] = zplan.slot constant offset = 0 size = 16 {init = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>} : memref<4xf32>
// CHECK-NEXT: %[[NV:.+]] = zplan.slot arena offset = 0 size = 16 live = [1, 5] : memref<4xf32>
// CHECK: zplan.launch "sgd"(%[[V]], %[[K]]) -> (%[[NV]]) {lr = 5.000000e-01 : f64, max_grad_norm = 0.000000e+00 : f64, momentum = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64} phase = update :
// CHECK-NEXT: zplan.launch "sgd"(%[[W]], %[[K]]) -> (%[[W]]) {lr = 5.000000e-01 : f64, max_grad_norm = 0.000000e+00 : f64, momentum = 0.000000e+00 : f64, weight_decay = 2.500000e-01 : f64} phase = update :
// CHECK-NEXT: zplan.launch "sum"(%[[V]])
// CHECK-NEXT: zplan.launch "copy"(%[[NV]]) -> (%[[V]]) {}
func.func @persistent(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>, zt.name = "w"},
                      %v: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>, zt.name = "v"})
    -> (tensor<4xf32> {zt.tied = 0 : i64}, tensor<4xf32> {zt.tied = 1 : i64}, tensor<f32> {zt.name = "late"})
    attributes {zt.entry = "train_step"} {
  %k = zt.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %nv = zt.sgd %v, %k {lr = 0.5 : f64, test.note = "not a parameter"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %nw = zt.sgd %w, %k {lr = 0.5 : f64, weight_decay = 0.25 : f64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %late = zt.sum %v, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %nw, %nv, %late : tensor<4xf32>, tensor<4xf32>, tensor<f32>
}
