module attributes {zplan.alignment = 256 : i64, zplan.arena_size = 2048 : i64, zplan.constant_size = 0 : i64, zplan.persistent_size = 256 : i64} {
  zplan.entry @bad kind = train_step arena = 2048 lower_bound = 1024 no_reuse = 2048 {
    %0 = zplan.slot input offset = 0 size = 1024 name = "x" role = input : memref<4x64xf32>
    %1 = zplan.slot persistent offset = 0 size = 256 name = "b" : memref<64xf32>
    %2 = zplan.slot arena offset = 0 size = 1024 live = [0, 4] name = "a" : memref<4x64xf32>
    %3 = zplan.slot output offset = 0 size = 4 name = "out" role = loss : memref<f32>
    %4 = zplan.broadcast_view %1 strides = [0, 1] : memref<64xf32> to memref<4x64xf32>
    zplan.launch "add"(%0, %4) -> (%2) {} : (memref<4x64xf32>, memref<4x64xf32>) -> (memref<4x64xf32>)
    %5 = zplan.broadcast_view %1 strides = [1, 1] : memref<64xf32> to memref<4x64xf32>
    zplan.launch "add"(%2, %5) -> (%2) {} : (memref<4x64xf32>, memref<4x64xf32>) -> (memref<4x64xf32>)
    zplan.launch "softmax"(%4) -> (%2) {axis = 1 : i64} : (memref<4x64xf32>) -> (memref<4x64xf32>)
    %6 = zplan.view %2 : memref<4x64xf32> to memref<256xf32>
    %7 = zplan.broadcast_view %6 strides = [0, 1] : memref<256xf32> to memref<4x256xf32>
    zplan.launch "mul"(%7, %7) -> (%6) {} : (memref<4x256xf32>, memref<4x256xf32>) -> (memref<256xf32>)
    zplan.launch "sum"(%2) -> (%3) {dims = array<i64: 0, 1>} : (memref<4x64xf32>) -> (memref<f32>)
  }
}
