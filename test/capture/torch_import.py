# RUN: %zcc-python %s | FileCheck %s -DFILE=%s
# zcc.from_torch: parameters by their PyTorch names, given at load; linear
# as a transposed matmul plus a broadcast bias; exact GELU; cross-entropy;
# every op located at the module's source line.
import torch
import torch.nn as nn
import torch.nn.functional as F

import zcc


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 16)
        self.act = nn.GELU()
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        return self.out(self.act(self.fc(x)))
# FC-LINE is 3 lines up.


traced = zcc.from_torch(Net(), (torch.randn(2, 8),),
                        (torch.randint(0, 4, (2,)),), loss=F.cross_entropy)
print(traced.ir(locations=True))

# CHECK-LABEL: func.func @Net(
# CHECK-SAME: tensor<2x8xf32> {zt.name = "x", zt.role = #zt.role<input>}
# CHECK-SAME: tensor<2xi64> {zt.name = "labels", zt.role = #zt.role<label>}
# CHECK-SAME: tensor<16x8xf32> {zt.init = #zt.init<given>, zt.name = "fc.weight", zt.role = #zt.role<parameter>}
# CHECK-SAME: tensor<16xf32> {zt.init = #zt.init<given>, zt.name = "fc.bias"
# CHECK: zt.matmul %{{.+}}, %{{.+}} {transpose_rhs} : (tensor<2x8xf32>, tensor<16x8xf32>) -> tensor<2x16xf32> loc(#[[FC:loc[0-9]+]])
# CHECK: zt.broadcast_in_dim {{.+}} dims = [1] : (tensor<16xf32>) -> tensor<2x16xf32>
# CHECK: zt.gelu_erf
# CHECK: zt.softmax_cross_entropy {{.+}} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
# CHECK: #[[FC]] = loc("[[FILE]]":20:0)
