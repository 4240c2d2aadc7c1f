// An MLP classifier in zt: 784 -> 256 -> 128 -> 10 with ReLU, mean softmax
// cross-entropy over a batch of 32 (MNIST-shaped). Broadcasting the biases is
// explicit, as everywhere in zt.
//
// Forward and loss only: zt-autodiff and zt-optimizer derive the backward pass
// and the parameter updates.
func.func @mlp_loss(
    %images: tensor<32x784xf32> {zt.name = "images", zt.role = #zt.role<input>},
    %labels: tensor<32xi32> {zt.name = "labels", zt.role = #zt.role<label>},
    %w1: tensor<784x256xf32> {zt.name = "w1", zt.role = #zt.role<parameter>, zt.init = #zt.init<uniform(low = -0.0357, high = 0.0357)>},
    %b1: tensor<256xf32> {zt.name = "b1", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %w2: tensor<256x128xf32> {zt.name = "w2", zt.role = #zt.role<parameter>, zt.init = #zt.init<uniform(low = -0.0625, high = 0.0625)>},
    %b2: tensor<128xf32> {zt.name = "b2", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %w3: tensor<128x10xf32> {zt.name = "w3", zt.role = #zt.role<parameter>, zt.init = #zt.init<uniform(low = -0.0884, high = 0.0884)>},
    %b3: tensor<10xf32> {zt.name = "b3", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  // Layer 1.
  %h1 = zt.matmul %images, %w1 : (tensor<32x784xf32>, tensor<784x256xf32>) -> tensor<32x256xf32>
  %b1_b = zt.broadcast_in_dim %b1, dims = [1] : (tensor<256xf32>) -> tensor<32x256xf32>
  %z1 = zt.add %h1, %b1_b : tensor<32x256xf32>
  %a1 = zt.relu %z1 : tensor<32x256xf32>
  // Layer 2.
  %h2 = zt.matmul %a1, %w2 : (tensor<32x256xf32>, tensor<256x128xf32>) -> tensor<32x128xf32>
  %b2_b = zt.broadcast_in_dim %b2, dims = [1] : (tensor<128xf32>) -> tensor<32x128xf32>
  %z2 = zt.add %h2, %b2_b : tensor<32x128xf32>
  %a2 = zt.relu %z2 : tensor<32x128xf32>
  // Output layer and loss.
  %h3 = zt.matmul %a2, %w3 : (tensor<32x128xf32>, tensor<128x10xf32>) -> tensor<32x10xf32>
  %b3_b = zt.broadcast_in_dim %b3, dims = [1] : (tensor<10xf32>) -> tensor<32x10xf32>
  %logits = zt.add %h3, %b3_b : tensor<32x10xf32>
  %loss = zt.softmax_cross_entropy %logits, %labels : (tensor<32x10xf32>, tensor<32xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
