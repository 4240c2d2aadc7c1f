// zt-mixed-precision: with bf16, every f32 product reads bf16 copies of its
// operands (one per value, before its first product) and keeps its f32
// result; zt-autodiff then gives bf16 products in the backward and f32
// gradients for the parameters.
// RUN: zt-opt %s -zt-mixed-precision=precision=bf16 | FileCheck %s
// RUN: zt-opt %s -zt-mixed-precision=precision=bf16 -zt-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: zt-opt %s -zt-mixed-precision=precision=f32 | FileCheck %s --check-prefix=F32
// RUN: not zt-opt %s -zt-mixed-precision=precision=f16 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: zt-mixed-precision: precision must be f32 or bf16, got 'f16'
// F32-NOT: zt.convert

// CHECK-LABEL: func.func @mlp
// CHECK: %[[X:.+]] = zt.convert %arg0 : tensor<8x16xf32> -> tensor<8x16xbf16>
// CHECK-NEXT: %[[W1:.+]] = zt.convert %arg2 : tensor<16x16xf32> -> tensor<16x16xbf16>
// CHECK-NEXT: %[[H:.+]] = zt.matmul %[[X]], %[[W1]] : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xf32>
// CHECK-NEXT: %[[A:.+]] = zt.tanh %[[H]] : tensor<8x16xf32>
// The activation read by two products is converted once.
// CHECK-NEXT: %[[AB:.+]] = zt.convert %[[A]] : tensor<8x16xf32> -> tensor<8x16xbf16>
// CHECK-NEXT: %[[W2:.+]] = zt.convert %arg3 : tensor<16x16xf32> -> tensor<16x16xbf16>
// CHECK-NEXT: zt.matmul %[[AB]], %[[W2]] : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xf32>
// CHECK-NEXT: %[[W3:.+]] = zt.convert %arg4 : tensor<16x16xf32> -> tensor<16x16xbf16>
// CHECK-NEXT: zt.matmul %[[AB]], %[[W3]] : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xf32>
// CHECK-NOT: zt.convert
// CHECK: return

// The backward: the incoming f32 gradient is converted for the products,
// whose results are bf16 gradients of bf16 values; the two reaching the
// shared activation add in bf16; converting back gives f32 gradients (the
// parameters', and the tanh's input).
// Parameters' bf16 copies are made again for the backward (zt.recompute),
// and the incoming gradient is converted once for both products.
// GRAD-LABEL: func.func @mlp
// GRAD: zt.mse_grad
// GRAD-NEXT: %[[DY:.+]] = zt.convert %{{.+}} : tensor<8x16xf32> -> tensor<8x16xbf16>
// GRAD-NEXT: %[[W3:.+]] = zt.convert %arg4 {zt.recompute} : tensor<16x16xf32> -> tensor<16x16xbf16>
// GRAD-NEXT: %[[D1:.+]] = zt.matmul %[[DY]], %[[W3]] {transpose_rhs} : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xbf16>
// GRAD: zt.matmul %{{.+}}, %[[DY]] {transpose_lhs} : (tensor<8x16xbf16>, tensor<8x16xbf16>) -> tensor<16x16xbf16>
// GRAD-NOT: = zt.convert %{{[0-9]+}} : tensor<8x16xf32> -> tensor<8x16xbf16>
// GRAD: %[[D2:.+]] = zt.matmul %[[DY]], %{{.+}} {transpose_rhs} : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xbf16>
// GRAD: zt.add %[[D1]], %[[D2]] : tensor<8x16xbf16>
// GRAD: zt.convert %{{.+}} : tensor<8x16xbf16> -> tensor<8x16xf32>
// GRAD: zt.tanh_grad %{{.+}}, %{{.+}} : tensor<8x16xf32>
// GRAD: zt.convert %{{.+}} : tensor<16x16xbf16> -> tensor<16x16xf32>
// GRAD: return %{{.+}} : tensor<f32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
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
