// zt-allow-tf32 marks every product of f32 operands tf32 and leaves bf16
// products alone; zcc's --matmul-precision tf32 runs it after zt-optimizer,
// so the gradients' products are marked too, and --report counts them.
// RUN: zt-opt %s -zt-allow-tf32 | FileCheck %s
// RUN: zt-opt %s -zt-allow-tf32 -zt-allow-tf32 | FileCheck %s
// RUN: zt-opt %examples/mlp.mlir -zcc-train-step="matmul-precision=tf32" | grep -c 'zplan.launch "matmul"' | FileCheck %s --check-prefix=COUNT
// RUN: zt-opt %examples/mlp.mlir -zcc-train-step="matmul-precision=tf32" | grep 'zplan.launch "matmul"' | grep -c 'tf32' | FileCheck %s --check-prefix=COUNT
// RUN: zt-opt %examples/mlp.mlir -zcc-train-step | FileCheck %s --check-prefix=NONE --implicit-check-not=tf32
// RUN: zcc %examples/mlp.mlir --matmul-precision tf32 --report | FileCheck %s --check-prefix=REPORT
// RUN: not zcc %examples/mlp.mlir --matmul-precision high -o %t.zplan 2>&1 | FileCheck %s --check-prefix=BAD
// On the CPU and the emulator (the reference: f32 products) a TF32 plan
// trains to the plain plan's bits.
// RUN: zcc %examples/mlp.mlir -o %t.plain.zplan
// RUN: zcc %examples/mlp.mlir --matmul-precision tf32 -o %t.tf32.zplan
// RUN: zrun %t.plain.zplan --steps 3 --trace | grep '^step' > %t.plain
// RUN: zrun %t.tf32.zplan --steps 3 --trace | grep '^step' > %t.cpu
// RUN: zrun %t.tf32.zplan --steps 3 --trace --device emulator | grep '^step' > %t.emulator
// RUN: cmp %t.plain %t.cpu
// RUN: cmp %t.plain %t.emulator
// RUN: not cmp %t.plain.zplan %t.tf32.zplan

// CHECK-LABEL: func.func @products
// CHECK: zt.matmul %arg0, %arg1 {tf32} :
// CHECK: zt.matmul %arg0, %arg1 {tf32, transpose_rhs} :
// CHECK: zt.matmul %arg2, %arg3 :
// CHECK-NOT: tf32
func.func @products(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>,
                    %c: tensor<4x8xbf16>, %d: tensor<8x2xbf16>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x2xf32>) {
  %0 = zt.matmul %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = zt.matmul %a, %b {transpose_rhs} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %2 = zt.matmul %c, %d : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xf32>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x2xf32>
}

// The MLP's three forward products and five gradient products (the first
// layer's input has no gradient), every one marked.
// COUNT: 8
// NONE: zplan.launch "matmul"
// REPORT: tf32         8 f32 products may round their operands to TF32 on the GPU
// BAD: zcc: error: option 'matmul-precision' must be 'highest' or 'tf32', got 'high'
