module attributes {zplan.alignment = 256 : i64, zplan.arena_size = 2048 : i64, zplan.constant_size = 0 : i64, zplan.persistent_size = 0 : i64} {
  zplan.entry @bad kind = train_step arena = 2048 lower_bound = 2048 no_reuse = 2048 {
    %0 = zplan.slot arena offset = 0 size = 1024 live = [0, 4] name = "saved" : memref<256xf32>
    %1 = zplan.slot arena offset = 512 size = 1024 live = [2, 3] name = "later" : memref<256xf32>
    %2 = zplan.slot arena offset = 768 size = 1024 live = [4, 6] : memref<256xf32>
    %3 = zplan.slot input offset = 0 size = 8 name = "x" : memref<2xf32>
    %4 = zplan.slot input offset = 4 size = 8 name = "y" : memref<2xf32>
  }
}
