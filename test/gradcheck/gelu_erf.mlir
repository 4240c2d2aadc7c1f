// gelu_erf (GELU's exact form, PyTorch's nn.GELU() default) over both
// signs: the fused gelu_erf_grad rule.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}w:
// CHECK-NEXT: gradient check: PASS
func.func @gelu_erf_step(
    %x: tensor<4x6xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %t: tensor<4x6xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %w: tensor<4x6xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 2.0)>}) -> tensor<f32> {
  %a = zt.gelu_erf %w : tensor<4x6xf32>
  %y = zt.mul %a, %x : tensor<4x6xf32>
  %l = zt.mse %y, %t : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
