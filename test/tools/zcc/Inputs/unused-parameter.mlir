// A parameter the loss does not read: zcc compiles it (its gradient is
// zero) and warns.
func.func @unused_loss(%x: tensor<4xf32> {zt.name = "x", zt.role = #zt.role<input>},
                       %w: tensor<4xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
                       %u: tensor<3xf32> {zt.name = "unused", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  %p = zt.mul %x, %w : tensor<4xf32>
  %l = zt.sum %p, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
