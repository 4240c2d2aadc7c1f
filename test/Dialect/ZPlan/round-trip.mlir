// Every zplan op prints back to what it parsed.
// RUN: zt-opt %s | zt-opt | FileCheck %s

// CHECK-LABEL: zplan.entry @step kind = train_step arena = 512 lower_bound = 512 no_reuse = 768
// CHECK: zplan.slot input offset = 0 size = 32 name = "x" role = input : memref<8xf32>
// CHECK: zplan.slot input offset = 256 size = 32 name = "y" role = label : memref<8xi32>
// CHECK: zplan.slot input offset = 512 size = 8 name = "step" role = step : memref<i64>
// CHECK: zplan.slot persistent offset = 0 size = 32 name = "w" {init = #zt.init<normal(mean = 0.000000e+00, std = 2.000000e-02)>} : memref<8xf32>
// CHECK: zplan.slot constant offset = 0 size = 8 {init = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>} : memref<2xf32>
// CHECK: zplan.slot arena offset = 0 size = 32 live = [0, 2] : memref<8xf32>
// CHECK: zplan.slot output offset = 0 size = 4 name = "loss" role = loss : memref<f32>
// CHECK: zplan.view %{{.*}} : memref<8xf32> to memref<2x4xf32>
// CHECK: zplan.broadcast_view %{{.*}} strides = [0, 1] : memref<2xf32> to memref<4x2xf32>
// CHECK: zplan.launch "mul"(%{{.*}}, %{{.*}}) -> (%{{.*}}) {} : (memref<8xf32>, memref<8xf32>) -> (memref<8xf32>)
// CHECK: zplan.launch "sum"(%{{.*}}) -> (%{{.*}}) {dims = array<i64: 0, 1>} phase = backward : (memref<2x4xf32>) -> (memref<f32>)
module attributes {zplan.alignment = 256 : i64, zplan.arena_size = 512 : i64, zplan.constant_size = 256 : i64, zplan.persistent_size = 256 : i64} {
  zplan.entry @step kind = train_step arena = 512 lower_bound = 512 no_reuse = 768 {
    %x = zplan.slot input offset = 0 size = 32 name = "x" role = input : memref<8xf32>
    %y = zplan.slot input offset = 256 size = 32 name = "y" role = label : memref<8xi32>
    %s = zplan.slot input offset = 512 size = 8 name = "step" role = step : memref<i64>
    %w = zplan.slot persistent offset = 0 size = 32 name = "w" {init = #zt.init<normal(mean = 0.0, std = 0.02)>} : memref<8xf32>
    %c = zplan.slot constant offset = 0 size = 8 {init = dense<[1.0, 2.0]> : tensor<2xf32>} : memref<2xf32>
    %t = zplan.slot arena offset = 0 size = 32 live = [0, 2] : memref<8xf32>
    %l = zplan.slot output offset = 0 size = 4 name = "loss" role = loss : memref<f32>
    %v = zplan.view %t : memref<8xf32> to memref<2x4xf32>
    %b = zplan.broadcast_view %c strides = [0, 1] : memref<2xf32> to memref<4x2xf32>
    zplan.launch "mul"(%x, %w) -> (%t) {} : (memref<8xf32>, memref<8xf32>) -> (memref<8xf32>)
    zplan.launch "sum"(%v) -> (%l) {dims = array<i64: 0, 1>} phase = backward : (memref<2x4xf32>) -> (memref<f32>)
  }
}
