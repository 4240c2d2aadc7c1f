// The shipped examples parse, verify, and print to a fixed point: printing,
// parsing and printing again gives byte-identical text.
// RUN: zt-opt %examples/mlp.mlir -o %t.mlp.1.mlir
// RUN: zt-opt %t.mlp.1.mlir -o %t.mlp.2.mlir
// RUN: diff %t.mlp.1.mlir %t.mlp.2.mlir
// RUN: FileCheck %s --check-prefix=MLP --input-file=%t.mlp.1.mlir
// RUN: zt-opt %examples/gpt_block.mlir -o %t.gpt.1.mlir
// RUN: zt-opt %t.gpt.1.mlir -o %t.gpt.2.mlir
// RUN: diff %t.gpt.1.mlir %t.gpt.2.mlir
// RUN: FileCheck %s --check-prefix=GPT --input-file=%t.gpt.1.mlir

// MLP-LABEL: func.func @mlp_loss
// MLP-SAME: {zt.name = "images", zt.role = #zt.role<input>}
// MLP-SAME: {zt.name = "labels", zt.role = #zt.role<label>}
// MLP: zt.matmul {{.*}} -> tensor<32x256xf32>
// MLP: zt.relu
// MLP: zt.matmul {{.*}} -> tensor<32x128xf32>
// MLP: zt.relu
// MLP: zt.matmul {{.*}} -> tensor<32x10xf32>
// MLP: zt.softmax_cross_entropy {{.*}} : (tensor<32x10xf32>, tensor<32xi32>) -> tensor<f32>
// MLP-NEXT: return

// GPT-LABEL: func.func @gpt_loss
// GPT-SAME: {zt.name = "step", zt.role = #zt.role<step>}
// GPT: zt.embedding
// Two blocks, each: layer_norm, fused causal attention, GELU MLP.
// GPT: zt.layer_norm
// GPT: zt.attention {{.*}} scale = 2.500000e-01 causal
// GPT: zt.dropout
// GPT: zt.gelu
// GPT: zt.layer_norm
// GPT: zt.attention {{.*}} scale = 2.500000e-01 causal
// GPT: zt.gelu
// GPT: zt.layer_norm
// GPT: zt.matmul {{.*}} {transpose_rhs} : (tensor<2x16x64xf32>, tensor<128x64xf32>) -> tensor<2x16x128xf32>
// GPT: zt.softmax_cross_entropy
