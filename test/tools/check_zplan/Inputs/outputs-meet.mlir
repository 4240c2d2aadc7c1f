module attributes {zplan.alignment = 256 : i64, zplan.arena_size = 4096 : i64, zplan.constant_size = 0 : i64, zplan.persistent_size = 0 : i64} {
  zplan.entry @bad kind = predict arena = 4096 lower_bound = 4096 no_reuse = 4096 {
    %0 = zplan.slot input offset = 0 size = 1024 name = "q" role = input : memref<1x2x16x8xf32>
    %1 = zplan.slot input offset = 1024 size = 1024 name = "k" role = input : memref<1x2x16x8xf32>
    %2 = zplan.slot input offset = 2048 size = 1024 name = "v" role = input : memref<1x2x16x8xf32>
    %3 = zplan.slot input offset = 3072 size = 1024 name = "y" role = input : memref<1x2x16x8xf32>
    %4 = zplan.slot input offset = 4096 size = 128 name = "lse" role = input : memref<1x2x16xf32>
    %5 = zplan.slot input offset = 4352 size = 1024 name = "dy" role = input : memref<1x2x16x8xf32>
    %6 = zplan.slot arena offset = 0 size = 3072 live = [0, 2] name = "g" : memref<1x16x48xf32>
    %7 = zplan.slot output offset = 0 size = 3072 name = "out" role = output : memref<1x16x48xf32>
    %8 = zplan.strided_view %6 offset = 0 strides = [768, 8, 48, 1] : memref<1x16x48xf32> to memref<1x2x16x8xf32>
    %9 = zplan.strided_view %6 offset = 8 strides = [768, 8, 48, 1] : memref<1x16x48xf32> to memref<1x2x16x8xf32>
    %10 = zplan.strided_view %6 offset = 32 strides = [768, 8, 48, 1] : memref<1x16x48xf32> to memref<1x2x16x8xf32>
    zplan.launch "attention_grad"(%0, %1, %2, %3, %4, %5) -> (%8, %9, %10) {scale = 3.500000e-01 : f64} : (memref<1x2x16x8xf32>, memref<1x2x16x8xf32>, memref<1x2x16x8xf32>, memref<1x2x16x8xf32>, memref<1x2x16xf32>, memref<1x2x16x8xf32>) -> (memref<1x2x16x8xf32>, memref<1x2x16x8xf32>, memref<1x2x16x8xf32>)
    zplan.launch "tanh"(%6) -> (%7) {} : (memref<1x16x48xf32>) -> (memref<1x16x48xf32>)
  }
}
