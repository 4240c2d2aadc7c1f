// zt-mixed-precision: with bf16, the products read bf16 operands (one
// conversion per value, before its first use) and write bf16 results; bf16
// flows through element ops, dropout and moves; everything else reads f32
// through a conversion back; the loss reads bf16 logits. zt-autodiff then
// gives bf16 gradients of bf16 values and f32 gradients for the parameters.
// RUN: zt-opt %s -zt-mixed-precision=precision=bf16 | FileCheck %s
// RUN: zt-opt %s -zt-mixed-precision=precision=bf16 -zt-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: zt-opt %s -zt-mixed-precision=precision=f32 | FileCheck %s --check-prefix=F32
// RUN: not zt-opt %s -zt-mixed-precision=precision=f16 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: zt-mixed-precision option 'precision' must be 'f32' or 'bf16', got 'f16'
// F32-NOT: zt.convert
// F32-NOT: bf16

// CHECK-LABEL: func.func @mlp
// CHECK: %[[X:.+]] = zt.convert %arg0 : tensor<8x16xf32> -> tensor<8x16xbf16>
// CHECK-NEXT: %[[W1:.+]] = zt.convert %arg2 : tensor<16x16xf32> -> tensor<16x16xbf16>
// CHECK-NEXT: %[[H:.+]] = zt.matmul %[[X]], %[[W1]] : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xbf16>
// The activation stays bf16; the two products read it without a copy.
// CHECK-NEXT: %[[A:.+]] = zt.tanh %[[H]] : tensor<8x16xbf16>
// CHECK-NEXT: %[[W2:.+]] = zt.convert %arg3 : tensor<16x16xf32> -> tensor<16x16xbf16>
// CHECK-NEXT: %[[Y:.+]] = zt.matmul %[[A]], %[[W2]] : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xbf16>
// CHECK-NEXT: %[[W3:.+]] = zt.convert %arg4 : tensor<16x16xf32> -> tensor<16x16xbf16>
// CHECK-NEXT: %[[Z:.+]] = zt.matmul %[[A]], %[[W3]] : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xbf16>
// CHECK-NEXT: %[[S:.+]] = zt.add %[[Y]], %[[Z]] : tensor<8x16xbf16>
// The loss is f32: its operand is converted back.
// CHECK-NEXT: %[[SF:.+]] = zt.convert %[[S]] : tensor<8x16xbf16> -> tensor<8x16xf32>
// CHECK-NEXT: zt.mse %[[SF]], %arg1

// CHECK-LABEL: func.func @block
// CHECK: %[[N:.+]] = zt.layer_norm %arg0
// CHECK-NEXT: %[[NB:.+]] = zt.convert %[[N]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[WB:.+]] = zt.convert %arg4
// CHECK-NEXT: %[[P:.+]] = zt.matmul %[[NB]], %[[WB]] : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// The bias is broadcast from its bf16 copy; the f32 broadcast is gone.
// CHECK-NEXT: %[[BB:.+]] = zt.convert %arg5 : tensor<8xf32> -> tensor<8xbf16>
// CHECK-NEXT: %[[BIAS:.+]] = zt.broadcast_in_dim %[[BB]], dims = [1] : (tensor<8xbf16>) -> tensor<4x8xbf16>
// CHECK-NEXT: %[[PB:.+]] = zt.add %[[P]], %[[BIAS]] : tensor<4x8xbf16>
// CHECK-NEXT: %[[ACT:.+]] = zt.gelu %[[PB]] : tensor<4x8xbf16>
// exp reads f32; the f32 sum meeting the bf16 branch comes in bf16, so the
// residual stream is bf16 from here on and the product reads it directly.
// CHECK-NEXT: %[[ACTF:.+]] = zt.convert %[[ACT]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: %[[E:.+]] = zt.exp %[[ACTF]] : tensor<4x8xf32>
// CHECK-NEXT: %[[R:.+]] = zt.add %arg0, %[[E]] : tensor<4x8xf32>
// CHECK-NEXT: %[[RB:.+]] = zt.convert %[[R]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[R2:.+]] = zt.add %[[RB]], %[[ACT]] : tensor<4x8xbf16>
// CHECK-NEXT: %[[HB:.+]] = zt.convert %arg6
// CHECK-NEXT: %[[L:.+]] = zt.matmul %[[R2]], %[[HB]] : (tensor<4x8xbf16>, tensor<8x10xbf16>) -> tensor<4x10xbf16>
// The loss reads the bf16 logits directly.
// CHECK-NEXT: zt.softmax_cross_entropy %[[L]], %arg1 : (tensor<4x10xbf16>, tensor<4xi32>) -> tensor<f32>
// CHECK-NOT: zt.broadcast_in_dim %arg5

// A bf16 value the function returns as f32 is converted back.
// CHECK-LABEL: func.func @returns
// CHECK: %[[P:.+]] = zt.matmul {{.+}} -> tensor<4x8xbf16>
// CHECK-NEXT: %[[PF:.+]] = zt.convert %[[P]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[PF]] : tensor<4x8xf32>

// The normalizations read and write bf16 activations with f32 gamma and
// beta; their gradients give bf16 activation gradients and f32 parameter
// gradients.
// CHECK-LABEL: func.func @norms
// x's one bf16 copy serves the product and the residual add.
// CHECK: %[[XB:.+]] = zt.convert %arg0 : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK: %[[P:.+]] = zt.matmul %[[XB]], {{.+}} -> tensor<4x8xbf16>
// CHECK-NEXT: %[[S:.+]] = zt.add %[[XB]], %[[P]] : tensor<4x8xbf16>
// CHECK-NEXT: %[[N:.+]] = zt.layer_norm %[[S]], %arg2, %arg3, eps = {{.+}} : (tensor<4x8xbf16>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xbf16>
// CHECK-NEXT: %[[M:.+]] = zt.rms_norm %[[N]], %arg2, eps = {{.+}} : (tensor<4x8xbf16>, tensor<8xf32>) -> tensor<4x8xbf16>
// CHECK-NEXT: zt.matmul %[[M]], %{{.+}} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// An f32 operand keeps the normalization f32.
// CHECK: zt.layer_norm %arg0, %arg2, %arg3, eps = {{.+}} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>

// Attention reads and writes bf16 (its logsumexp stays f32); so its
// gradient takes and gives bf16.
// CHECK-LABEL: func.func @attend
// CHECK: zt.matmul {{.+}} -> tensor<2x8x24xbf16>
// CHECK: zt.transpose {{.+}} -> tensor<2x6x8x4xbf16>
// CHECK-NEXT: %[[Q:.+]] = zt.slice {{.+}} -> tensor<2x2x8x4xbf16>
// CHECK-NOT: zt.convert
// CHECK: %[[Y:.+]], %[[LSE:.+]] = zt.attention %[[Q]], %{{.+}}, %{{.+}}, scale = 5.000000e-01 causal : (tensor<2x2x8x4xbf16>, tensor<2x2x8x4xbf16>, tensor<2x2x8x4xbf16>) -> (tensor<2x2x8x4xbf16>, tensor<2x2x8xf32>)
// CHECK-NEXT: zt.transpose %[[Y]], {{.+}} -> tensor<2x8x2x4xbf16>

// The backward: the logits' gradient is bf16, the products' gradients are
// bf16, a bias's gradient sums in bf16 and converts back, and every
// parameter's gradient leaves in f32.
// GRAD-LABEL: func.func @block
// GRAD: %[[DL:.+]] = zt.softmax_cross_entropy_grad %{{.+}}, %arg1, %{{.+}} : (tensor<4x10xbf16>, tensor<4xi32>, tensor<f32>) -> tensor<4x10xbf16>
// GRAD: zt.matmul %[[DL]], %{{.+}} {transpose_rhs} : (tensor<4x10xbf16>, tensor<8x10xbf16>) -> tensor<4x8xbf16>
// GRAD: %[[DACT:.+]] = zt.gelu_grad %{{.+}}, %{{.+}} : tensor<4x8xbf16>
// GRAD-NEXT: %[[DB:.+]] = zt.sum %[[DACT]], dims = [0] : (tensor<4x8xbf16>) -> tensor<8xbf16>
// GRAD-NEXT: %[[DBF:.+]] = zt.convert %[[DB]] : tensor<8xbf16> -> tensor<8xf32>
// GRAD: zt.layer_norm_grad %arg0, %arg2, %{{.+}} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>)
// GRAD: return %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[DBF]], %{{.+}} : tensor<f32>, tensor<8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x10xf32>
// GRAD-LABEL: func.func @norms
// GRAD: zt.rms_norm_grad %{{.+}}, %arg2, %{{.+}} : (tensor<4x8xbf16>, tensor<8xf32>, tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<8xf32>)
// GRAD: zt.layer_norm_grad %{{.+}}, %arg2, %{{.+}} : (tensor<4x8xbf16>, tensor<8xf32>, tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<8xf32>, tensor<8xf32>)
// GRAD-LABEL: func.func @attend
// GRAD: zt.attention_grad {{.+}} : (tensor<2x2x8x4xbf16>, tensor<2x2x8x4xbf16>, tensor<2x2x8x4xbf16>, tensor<2x2x8x4xbf16>, tensor<2x2x8xf32>, tensor<2x2x8x4xbf16>) -> (tensor<2x2x8x4xbf16>, tensor<2x2x8x4xbf16>, tensor<2x2x8x4xbf16>)

func.func @mlp(%x: tensor<8x16xf32> {zt.name = "x", zt.role = #zt.role<input>},
               %t: tensor<8x16xf32> {zt.name = "t", zt.role = #zt.role<label>},
               %w1: tensor<16x16xf32> {zt.name = "w1", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.1)>},
               %w2: tensor<16x16xf32> {zt.name = "w2", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.1)>},
               %w3: tensor<16x16xf32> {zt.name = "w3", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.1)>}) -> tensor<f32> {
  %h = zt.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %a = zt.tanh %h : tensor<8x16xf32>
  %y = zt.matmul %a, %w2 : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %z = zt.matmul %a, %w3 : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %s = zt.add %y, %z : tensor<8x16xf32>
  %l = zt.mse %s, %t : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

func.func @block(%x: tensor<4x8xf32> {zt.name = "x", zt.role = #zt.role<input>},
                 %labels: tensor<4xi32> {zt.name = "labels", zt.role = #zt.role<label>},
                 %g: tensor<8xf32> {zt.name = "g", zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>},
                 %beta: tensor<8xf32> {zt.name = "beta", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                 %w: tensor<8x8xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.1)>},
                 %b: tensor<8xf32> {zt.name = "b", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                 %head: tensor<8x10xf32> {zt.name = "head", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.1)>}) -> tensor<f32> {
  %n = zt.layer_norm %x, %g, %beta, eps = 1.0e-5 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %p = zt.matmul %n, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %bias = zt.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %pb = zt.add %p, %bias : tensor<4x8xf32>
  %act = zt.gelu %pb : tensor<4x8xf32>
  %e = zt.exp %act : tensor<4x8xf32>
  %r = zt.add %x, %e : tensor<4x8xf32>
  %r2 = zt.add %r, %act : tensor<4x8xf32>
  %logits = zt.matmul %r2, %head : (tensor<4x8xf32>, tensor<8x10xf32>) -> tensor<4x10xf32>
  %loss = zt.softmax_cross_entropy %logits, %labels : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

func.func @returns(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %p = zt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}

func.func @norms(%x: tensor<4x8xf32> {zt.name = "x", zt.role = #zt.role<input>},
                 %w: tensor<8x8xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.1)>},
                 %g: tensor<8xf32> {zt.name = "g", zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>},
                 %beta: tensor<8xf32> {zt.name = "beta", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %p = zt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = zt.add %x, %p : tensor<4x8xf32>
  %n = zt.layer_norm %s, %g, %beta, eps = 1.0e-5 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %m = zt.rms_norm %n, %g, eps = 1.0e-6 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %q = zt.matmul %m, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %f = zt.layer_norm %x, %g, %beta, eps = 1.0e-5 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %t = zt.add %f, %q : tensor<4x8xf32>
  %l = zt.sum %t, dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

func.func @attend(%x: tensor<2x8x8xf32> {zt.name = "x", zt.role = #zt.role<input>},
                  %w: tensor<8x24xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.1)>}) -> tensor<f32> {
  %qkv = zt.matmul %x, %w : (tensor<2x8x8xf32>, tensor<8x24xf32>) -> tensor<2x8x24xf32>
  %r = zt.reshape %qkv : (tensor<2x8x24xf32>) -> tensor<2x8x6x4xf32>
  %h = zt.transpose %r, perm = [0, 2, 1, 3] : (tensor<2x8x6x4xf32>) -> tensor<2x6x8x4xf32>
  %q = zt.slice %h [0:2, 0:2, 0:8, 0:4] : (tensor<2x6x8x4xf32>) -> tensor<2x2x8x4xf32>
  %k = zt.slice %h [0:2, 2:4, 0:8, 0:4] : (tensor<2x6x8x4xf32>) -> tensor<2x2x8x4xf32>
  %v = zt.slice %h [0:2, 4:6, 0:8, 0:4] : (tensor<2x6x8x4xf32>) -> tensor<2x2x8x4xf32>
  %y, %lse = zt.attention %q, %k, %v, scale = 5.000000e-01 causal : (tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>) -> (tensor<2x2x8x4xf32>, tensor<2x2x8xf32>)
  %m = zt.transpose %y, perm = [0, 2, 1, 3] : (tensor<2x2x8x4xf32>) -> tensor<2x8x2x4xf32>
  %s = zt.sum %m, dims = [0, 1, 2, 3] : (tensor<2x8x2x4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
