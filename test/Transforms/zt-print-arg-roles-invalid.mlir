// zt-print-arg-roles rejects a training-step function with an argument that
// has no role, and prints nothing for it.
// RUN: zt-opt %s -zt-print-arg-roles -verify-diagnostics -o /dev/null | FileCheck %s --allow-empty
// CHECK-NOT: zt-print-arg-roles

// Once one argument has a role, every argument needs one.
// expected-error @+1 {{argument #1 has no 'zt.role'; once one argument of a training-step function has a role, every argument needs one}}
func.func @partial(%x: tensor<4xf32> {zt.role = #zt.role<input>}, %y: tensor<4xf32>) {
  return
}
