// zt-optimizer under mixed precision: a parameter's gradient comes in bf16
// and zt-autodiff converts it to f32 for the update; where the update (and
// clipping's sum of squares) are the conversion's only readers, they read
// the bf16 gradient itself (widening is exact: the same bits, one launch
// and an f32 copy fewer).
// RUN: zt-opt %examples/mlp.mlir -zt-mixed-precision=precision=bf16 -zt-autodiff -zt-optimizer="optimizer=adamw lr=0.1" | FileCheck %s
// CHECK-LABEL: func.func @mlp_loss
// CHECK: %[[G:.+]] = zt.matmul {{.+}} -> tensor<128x10xbf16>
// CHECK-NOT: zt.convert %[[G]]
// CHECK: zt.adamw %arg6, %[[G]], {{.+}} : (tensor<128x10xf32>, tensor<128x10xbf16>, tensor<128x10xf32>, tensor<128x10xf32>, tensor<i64>)
// CHECK-COUNT-4: zt.adamw {{.+}} : (tensor<{{[0-9x]+}}xf32>, tensor<{{[0-9x]+}}xbf16>,
// CHECK-NOT: zt.adamw
// No bf16 -> f32 conversion is left (the loss reads the bf16 logits).
// RUN: zt-opt %examples/mlp.mlir -zt-mixed-precision=precision=bf16 -zt-autodiff -zt-optimizer="optimizer=adamw lr=0.1" | FileCheck %s --check-prefix=NONE
// NONE-LABEL: func.func @mlp_loss
// NONE-NOT: xbf16> -> tensor<

// RUN: zt-opt %examples/mlp.mlir -zt-mixed-precision=precision=bf16 -zt-autodiff -zt-optimizer="optimizer=sgd lr=0.1 momentum=0.9" | FileCheck %s --check-prefix=SGD
// SGD-COUNT-6: zt.sgd {{.+}} : (tensor<{{[0-9x]+}}xf32>, tensor<{{[0-9x]+}}xbf16>, tensor<{{[0-9x]+}}xf32>)

// Clipping's sums of squares read them too (in f64, into an f32 sum).
// RUN: zt-opt %examples/mlp.mlir -zt-mixed-precision=precision=bf16 -zt-autodiff -zt-optimizer="optimizer=adamw lr=0.1 clip-grad-norm=1.0" | FileCheck %s --check-prefix=CLIP
// CLIP-NOT: xbf16> -> tensor<
// CLIP: zt.sum_squares {{.+}} : (tensor<{{[0-9x]+}}xbf16>) -> tensor<f32>
// CLIP-COUNT-5: zt.sum_squares {{.+}} : (tensor<{{[0-9x]+}}xbf16>, tensor<f32>) -> tensor<f32>
// CLIP-COUNT-6: zt.adamw {{.+}} : (tensor<{{[0-9x]+}}xf32>, tensor<{{[0-9x]+}}xbf16>,

// A scaled gradient (grad-scale) is a new f32 value: the conversions stay.
// RUN: zt-opt %examples/mlp.mlir -zt-mixed-precision=precision=bf16 -zt-autodiff -zt-optimizer="optimizer=adamw lr=0.1 grad-scale=0.5" | FileCheck %s --check-prefix=SCALE
// SCALE-COUNT-6: zt.adamw {{.+}} : (tensor<{{[0-9x]+}}xf32>, tensor<{{[0-9x]+}}xf32>,

// f32 training has no conversion to drop.
// RUN: zt-opt %examples/mlp.mlir -zt-autodiff -zt-optimizer="optimizer=adamw lr=0.1" | FileCheck %s --check-prefix=F32
// F32-NOT: bf16
// F32-COUNT-6: zt.adamw {{.+}} : (tensor<{{[0-9x]+}}xf32>, tensor<{{[0-9x]+}}xf32>,
