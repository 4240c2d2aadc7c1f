// The arena-reset failure, reproduced as a test. In eager training, an arena
// reset handed the bytes of an activation saved for the backward pass to
// later forward values of the same size; the loss stayed right and the
// gradients collapsed to zero. Here %saved (tanh at position 1) is saved for
// two backward uses: its own tanh_grad and the gradient of %w2 (%saved^T
// times the incoming gradient). After it, the forward makes three more
// 32x64 values (8192 bytes each, like %saved).
//
// The liveness analysis must keep %saved live up to its last backward use,
// and the plan must give no value live in between any of its bytes; the
// independent checker confirms both on the final plan.
//
// RUN: zt-opt %s -zt-autodiff -zt-optimizer -zt-print-liveness -o /dev/null | FileCheck %s
// RUN: zt-opt %s -zcc-train-step | %python %S/../tools/check_zplan.py - --saved saved | FileCheck %s --check-prefix=PLAN

// %saved is buffer SAVED: computed in place over %h (the matmul at 0, whose
// value dies at the tanh), defined at position 1, live until END (15: its
// tanh_grad at 13, after the optimizer update of w2 at 12, is written in
// place too, and read by the matmul at 14).
// CHECK: #[[SAVED:[0-9]+]] arena [0, [[#END:]]) 8192 bytes: zt.tanh at 1
// The forward values made after it (the matmul at 2, with the tanh at 3
// written over it, and the exp at 4) are all live while it is.
// CHECK-NEXT: #{{[0-9]+}} arena [2, {{[0-9]+}}) 8192 bytes: zt.matmul at 2
// CHECK-NEXT: #{{[0-9]+}} arena [4, {{[0-9]+}}) 8192 bytes: zt.exp at 4
// Its last read, at END - 1, is in the backward.
// (13 with zcc's default fusion: two element ops run inside their readers'
// programs.)
// CHECK: schedule:
// CHECK: [[#END-1]] zt.{{[a-z_]+}} ({{.*}}#[[SAVED]]{{[,)]}}
// CHECK-NOT: #[[SAVED]]{{[,)]}}
// CHECK: return

// PLAN: entry @arena_reset: saved 'saved' live [0, {{1[35]}}) at [{{[0-9]+}}, {{[0-9]+}}); {{[0-9]+}} slots live with it, 0 share its bytes
// PLAN-NEXT: entry @arena_reset: {{[0-9]+}} arena slots, arena {{[0-9]+}}, lower bound {{[0-9]+}}, no reuse {{[0-9]+}}: ok
func.func @arena_reset(%x: tensor<32x64xf32> {zt.role = #zt.role<input>, zt.name = "x"},
                       %labels: tensor<32xi32> {zt.role = #zt.role<label>, zt.name = "labels"},
                       %w1: tensor<64x64xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.1)>, zt.name = "w1"},
                       %w2: tensor<64x64xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.1)>, zt.name = "w2"}) -> tensor<f32> {
  %h = zt.matmul %x, %w1 : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
  %saved = zt.tanh %h : tensor<32x64xf32> loc("saved")
  %h2 = zt.matmul %saved, %w2 : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
  %b = zt.tanh %h2 : tensor<32x64xf32>
  %c = zt.exp %b : tensor<32x64xf32>
  %loss = zt.softmax_cross_entropy %c, %labels : (tensor<32x64xf32>, tensor<32xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
