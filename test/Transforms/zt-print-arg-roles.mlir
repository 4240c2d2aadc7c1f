// zt-print-arg-roles lists each argument's role, size and initializer, and
// totals per role.
// RUN: zt-opt %s -zt-print-arg-roles -o /dev/null | FileCheck %s

// CHECK-LABEL: zt-print-arg-roles @step
// CHECK-NEXT: arg #0 input tensor<4x8xf32> 128 bytes
// CHECK-NEXT: arg #1 label tensor<4xi64> 32 bytes
// CHECK-NEXT: arg #2 parameter tensor<8x2xf32> 64 bytes init #zt.init<normal(mean = 0.000000e+00, std = 2.000000e-02)>
// CHECK-NEXT: arg #3 parameter tensor<2xbf16> 4 bytes init #zt.init<zeros>
// CHECK-NEXT: arg #4 step tensor<i64> 8 bytes
// CHECK-NEXT: total input: 1 tensors, 128 bytes
// CHECK-NEXT: total label: 1 tensors, 32 bytes
// CHECK-NEXT: total parameter: 2 tensors, 68 bytes
// CHECK-NEXT: total step: 1 tensors, 8 bytes
func.func @step(%x: tensor<4x8xf32> {zt.role = #zt.role<input>},
                %y: tensor<4xi64> {zt.role = #zt.role<label>},
                %w: tensor<8x2xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.02)>},
                %b: tensor<2xbf16> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                %s: tensor<i64> {zt.role = #zt.role<step>}) {
  return
}

// Every role has its total (the persistent ones after the others'), state
// included.
// CHECK-LABEL: zt-print-arg-roles @persistent_roles
// CHECK: total parameter: 1 tensors, 16 bytes
// CHECK-NEXT: total optimizer_state: 1 tensors, 16 bytes
// CHECK-NEXT: total accumulator: 1 tensors, 16 bytes
// CHECK-NEXT: total state: 2 tensors, 20 bytes
func.func @persistent_roles(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                            %m: tensor<4xf32> {zt.role = #zt.role<optimizer_state>, zt.init = #zt.init<zeros>},
                            %a: tensor<4xf32> {zt.role = #zt.role<accumulator>, zt.init = #zt.init<zeros>},
                            %rm: tensor<4xf32> {zt.role = #zt.role<state>, zt.init = #zt.init<zeros>},
                            %n: tensor<f32> {zt.role = #zt.role<state>, zt.init = #zt.init<zeros>}) {
  return
}

// A function without roles is not a training step: nothing is printed.
// CHECK-NOT: @helper
func.func @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

