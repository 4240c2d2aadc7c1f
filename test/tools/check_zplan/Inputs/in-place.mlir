module attributes {zplan.alignment = 256 : i64, zplan.arena_size = 2048 : i64, zplan.constant_size = 0 : i64, zplan.persistent_size = 0 : i64} {
  zplan.entry @bad kind = train_step arena = 2048 lower_bound = 1024 no_reuse = 2048 {
    %0 = zplan.slot input offset = 0 size = 1024 name = "x" role = input : memref<4x64xf32>
    %1 = zplan.slot arena offset = 0 size = 1024 live = [0, 3] name = "a" : memref<4x64xf32>
    %2 = zplan.slot output offset = 0 size = 4 name = "out" role = loss : memref<f32>
    zplan.launch "exp"(%0) -> (%1) {} : (memref<4x64xf32>) -> (memref<4x64xf32>)
    zplan.launch "exp"(%1) -> (%1) {} : (memref<4x64xf32>) -> (memref<4x64xf32>)
    %3 = zplan.view %1 : memref<4x64xf32> to memref<256xf32>
    zplan.launch "softmax"(%1) -> (%1) {axis = 1 : i64} : (memref<4x64xf32>) -> (memref<4x64xf32>)
    zplan.launch "sum"(%3) -> (%2) {dims = array<i64: 0>} : (memref<256xf32>) -> (memref<f32>)
  }
}
