// A loss that moves the batch dimension (a transpose of the input), so the
// program cannot be divided into microbatches (microbatch.test).
func.func @moved_loss(
    %x: tensor<4x8xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %w: tensor<4x3xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.1)>}) -> tensor<f32> {
  %t = zt.transpose %x, perm = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %y = zt.matmul %t, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %loss = zt.mean %y, dims = [0, 1] : (tensor<8x3xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
