// A training step with an input of its own named lr.
func.func @step(%x: tensor<4x8xf32> {zt.name = "lr", zt.role = #zt.role<input>},
                %w: tensor<8xf32> {zt.init = #zt.init<zeros>, zt.name = "w", zt.role = #zt.role<parameter>})
    -> (tensor<f32> {zt.name = "loss"}, tensor<8xf32> {zt.gradient_of = 1 : i64, zt.name = "w.grad"})
    attributes {zt.entry = "train_step"} {
  %l = zt.sum %x, dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %dw = zt.sum %x, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  return %l, %dw : tensor<f32>, tensor<8xf32>
}
