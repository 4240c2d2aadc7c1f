// matmul with all four transpose-flag combinations on rank-2 operands: the
// backward products use the flags, so each combination has its own rule.
// RUN: zcc %s --optimizer none -o %t.zplan
// RUN: zcc-gradcheck %t.zplan --samples 32 | FileCheck %s
// CHECK: ok{{ +}}a_tt:
// CHECK-NEXT: ok{{ +}}b_tt:
// CHECK-NEXT: ok{{ +}}a_nt:
// CHECK-NEXT: ok{{ +}}b_nt:
// CHECK-NEXT: ok{{ +}}a_tn:
// CHECK-NEXT: ok{{ +}}b_tn:
// CHECK-NEXT: ok{{ +}}a_nn:
// CHECK-NEXT: ok{{ +}}b_nn:
// CHECK-NEXT: gradient check: PASS
func.func @matmul_step(
    %t: tensor<3x2xf32> {zt.name = "target", zt.role = #zt.role<label>},
    %a_nn: tensor<3x4xf32> {zt.name = "a_nn", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %b_nn: tensor<4x2xf32> {zt.name = "b_nn", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %a_tn: tensor<4x3xf32> {zt.name = "a_tn", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %b_tn: tensor<4x2xf32> {zt.name = "b_tn", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %a_nt: tensor<3x4xf32> {zt.name = "a_nt", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %b_nt: tensor<2x4xf32> {zt.name = "b_nt", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %a_tt: tensor<4x3xf32> {zt.name = "a_tt", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>},
    %b_tt: tensor<2x4xf32> {zt.name = "b_tt", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 1.0)>}) -> tensor<f32> {
  %nn = zt.matmul %a_nn, %b_nn : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %tn = zt.matmul %a_tn, %b_tn {transpose_lhs} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %nt = zt.matmul %a_nt, %b_nt {transpose_rhs} : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
  %tt = zt.matmul %a_tt, %b_tt {transpose_lhs, transpose_rhs} : (tensor<4x3xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
  // Products of the four keep their gradients distinct (a sum would give each
  // the same incoming gradient).
  %p = zt.mul %nn, %tn : tensor<3x2xf32>
  %q = zt.mul %nt, %tt : tensor<3x2xf32>
  %y = zt.add %p, %q : tensor<3x2xf32>
  %l = zt.mse %y, %t : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
