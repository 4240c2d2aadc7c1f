// A classifier that divides each row's features by the row's sum: a row of
// zeros in the data is a division by zero (nonfinite.test).
func.func @normalized_loss(
    %x: tensor<4x8xf32> {zt.name = "x", zt.role = #zt.role<input>},
    %labels: tensor<4xi32> {zt.name = "labels", zt.role = #zt.role<label>},
    %w: tensor<8x3xf32> {zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.1)>}) -> tensor<f32> {
  %total = zt.sum %x, dims = [1] {keep_dims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %spread = zt.broadcast_in_dim %total, dims = [0, 1] : (tensor<4x1xf32>) -> tensor<4x8xf32>
  %shares = zt.div %x, %spread : tensor<4x8xf32>
  %logits = zt.matmul %shares, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %loss = zt.softmax_cross_entropy %logits, %labels : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
