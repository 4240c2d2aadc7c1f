# RUN: %zcc-python %s | FileCheck %s
# A captured MLP prints the program of examples/mlp.mlir: arguments by role,
# biases broadcast explicitly, parameter initializers.
import zcc


def mlp_loss(images, labels):
    w1 = zcc.param("w1", (784, 256), init=zcc.init.uniform(-0.0357, 0.0357))
    b1 = zcc.param("b1", (256,))
    w2 = zcc.param("w2", (256, 10), init=zcc.init.normal(0.0, 0.02))
    b2 = zcc.param("b2", (10,))
    h = zcc.ops.relu(images @ w1 + b1)
    return zcc.ops.cross_entropy(h @ w2 + b2, labels)


traced = zcc.trace(mlp_loss, images=zcc.input((32, 784)),
                   labels=zcc.label((32,), "int32"))
print(traced.ir())

# CHECK-LABEL: func.func @mlp_loss(
# CHECK-SAME: %[[X:.+]]: tensor<32x784xf32> {zt.name = "images", zt.role = #zt.role<input>}
# CHECK-SAME: %[[Y:.+]]: tensor<32xi32> {zt.name = "labels", zt.role = #zt.role<label>}
# CHECK-SAME: %[[W1:.+]]: tensor<784x256xf32> {zt.init = #zt.init<uniform(low = -3.570000e-02, high = 3.570000e-02)>, zt.name = "w1", zt.role = #zt.role<parameter>}
# CHECK-SAME: %[[B1:.+]]: tensor<256xf32> {zt.init = #zt.init<zeros>, zt.name = "b1"
# CHECK-SAME: zt.init = #zt.init<normal(mean = 0.000000e+00, std = 2.000000e-02)>, zt.name = "w2"
# CHECK: %[[H:.+]] = zt.matmul %[[X]], %[[W1]] : (tensor<32x784xf32>, tensor<784x256xf32>) -> tensor<32x256xf32>
# CHECK: %[[BB:.+]] = zt.broadcast_in_dim %[[B1]], dims = [1] : (tensor<256xf32>) -> tensor<32x256xf32>
# CHECK: %[[Z:.+]] = zt.add %[[H]], %[[BB]] : tensor<32x256xf32>
# CHECK: zt.relu %[[Z]]
# CHECK: %[[LOSS:.+]] = zt.softmax_cross_entropy %{{.+}}, %[[Y]] : (tensor<32x10xf32>, tensor<32xi32>) -> tensor<f32>
# CHECK: return %[[LOSS]] : tensor<f32>
