// A GPT-style language model in zt: token + position embeddings, 2 pre-norm
// transformer blocks (causal multi-head self-attention, GELU MLP, residual
// dropout), a final layer_norm, logits tied to the token embedding, and the
// mean next-token cross-entropy. batch 2, sequence 16, model width 64,
// 4 heads of 16, MLP width 256, vocabulary 128.
//
// Forward and loss only: zt-autodiff and zt-optimizer derive the backward pass
// and the parameter updates.
func.func @gpt_loss(
    %tokens: tensor<2x16xi32> {zt.name = "tokens", zt.role = #zt.role<input>},
    %targets: tensor<2x16xi32> {zt.name = "targets", zt.role = #zt.role<label>},
    %step: tensor<i64> {zt.name = "step", zt.role = #zt.role<step>},
    %wte: tensor<128x64xf32> {zt.name = "wte", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.02)>},
    %wpe: tensor<16x64xf32> {zt.name = "wpe", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.02)>},
    %h0_ln1_g: tensor<64xf32> {zt.name = "h0.ln1_g", zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>},
    %h0_ln1_b: tensor<64xf32> {zt.name = "h0.ln1_b", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %h0_w_qkv: tensor<64x192xf32> {zt.name = "h0.w_qkv", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.02)>},
    %h0_b_qkv: tensor<192xf32> {zt.name = "h0.b_qkv", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %h0_w_o: tensor<64x64xf32> {zt.name = "h0.w_o", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.02)>},
    %h0_b_o: tensor<64xf32> {zt.name = "h0.b_o", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %h0_ln2_g: tensor<64xf32> {zt.name = "h0.ln2_g", zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>},
    %h0_ln2_b: tensor<64xf32> {zt.name = "h0.ln2_b", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %h0_w_fc: tensor<64x256xf32> {zt.name = "h0.w_fc", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.02)>},
    %h0_b_fc: tensor<256xf32> {zt.name = "h0.b_fc", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %h0_w_proj: tensor<256x64xf32> {zt.name = "h0.w_proj", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.02)>},
    %h0_b_proj: tensor<64xf32> {zt.name = "h0.b_proj", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %h1_ln1_g: tensor<64xf32> {zt.name = "h1.ln1_g", zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>},
    %h1_ln1_b: tensor<64xf32> {zt.name = "h1.ln1_b", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %h1_w_qkv: tensor<64x192xf32> {zt.name = "h1.w_qkv", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.02)>},
    %h1_b_qkv: tensor<192xf32> {zt.name = "h1.b_qkv", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %h1_w_o: tensor<64x64xf32> {zt.name = "h1.w_o", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.02)>},
    %h1_b_o: tensor<64xf32> {zt.name = "h1.b_o", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %h1_ln2_g: tensor<64xf32> {zt.name = "h1.ln2_g", zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>},
    %h1_ln2_b: tensor<64xf32> {zt.name = "h1.ln2_b", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %h1_w_fc: tensor<64x256xf32> {zt.name = "h1.w_fc", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.02)>},
    %h1_b_fc: tensor<256xf32> {zt.name = "h1.b_fc", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %h1_w_proj: tensor<256x64xf32> {zt.name = "h1.w_proj", zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.02)>},
    %h1_b_proj: tensor<64xf32> {zt.name = "h1.b_proj", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>},
    %lnf_g: tensor<64xf32> {zt.name = "lnf_g", zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>},
    %lnf_b: tensor<64xf32> {zt.name = "lnf_b", zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> tensor<f32> {
  // Token and position embeddings.
  %tok = zt.embedding %wte, %tokens : (tensor<128x64xf32>, tensor<2x16xi32>) -> tensor<2x16x64xf32>
  %pos = zt.broadcast_in_dim %wpe, dims = [1, 2] : (tensor<16x64xf32>) -> tensor<2x16x64xf32>
  %x0 = zt.add %tok, %pos : tensor<2x16x64xf32>

  // Block 0: pre-norm causal self-attention.
  %b0_ln1 = zt.layer_norm %x0, %h0_ln1_g, %h0_ln1_b, eps = 1.0e-5 : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %b0_qkv = zt.matmul %b0_ln1, %h0_w_qkv : (tensor<2x16x64xf32>, tensor<64x192xf32>) -> tensor<2x16x192xf32>
  %b0_qkv_bias = zt.broadcast_in_dim %h0_b_qkv, dims = [2] : (tensor<192xf32>) -> tensor<2x16x192xf32>
  %b0_qkv_b = zt.add %b0_qkv, %b0_qkv_bias : tensor<2x16x192xf32>
  %b0_q = zt.slice %b0_qkv_b [0:2, 0:16, 0:64] : (tensor<2x16x192xf32>) -> tensor<2x16x64xf32>
  %b0_q_split = zt.reshape %b0_q : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %b0_q_heads = zt.transpose %b0_q_split, perm = [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %b0_k = zt.slice %b0_qkv_b [0:2, 0:16, 64:128] : (tensor<2x16x192xf32>) -> tensor<2x16x64xf32>
  %b0_k_split = zt.reshape %b0_k : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %b0_k_heads = zt.transpose %b0_k_split, perm = [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %b0_v = zt.slice %b0_qkv_b [0:2, 0:16, 128:192] : (tensor<2x16x192xf32>) -> tensor<2x16x64xf32>
  %b0_v_split = zt.reshape %b0_v : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %b0_v_heads = zt.transpose %b0_v_split, perm = [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  // softmax(q k^T / 4 + causal mask) v, fused: only the output and one
  // logsumexp per query row are kept for the backward.
  %b0_ctx, %b0_lse = zt.attention %b0_q_heads, %b0_k_heads, %b0_v_heads, scale = 0.25 causal : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> (tensor<2x4x16x16xf32>, tensor<2x4x16xf32>)
  %b0_ctx_t = zt.transpose %b0_ctx, perm = [0, 2, 1, 3] : (tensor<2x4x16x16xf32>) -> tensor<2x16x4x16xf32>
  %b0_ctx_m = zt.reshape %b0_ctx_t : (tensor<2x16x4x16xf32>) -> tensor<2x16x64xf32>
  %b0_attn = zt.matmul %b0_ctx_m, %h0_w_o : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  %b0_attn_bias = zt.broadcast_in_dim %h0_b_o, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
  %b0_attn_b = zt.add %b0_attn, %b0_attn_bias : tensor<2x16x64xf32>
  %b0_attn_d = zt.dropout %b0_attn_b, %step, rate = 0.1, seed = 1 : (tensor<2x16x64xf32>, tensor<i64>) -> tensor<2x16x64xf32>
  %b0_res1 = zt.add %x0, %b0_attn_d : tensor<2x16x64xf32>
  // Block 0: pre-norm GELU MLP.
  %b0_ln2 = zt.layer_norm %b0_res1, %h0_ln2_g, %h0_ln2_b, eps = 1.0e-5 : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %b0_fc = zt.matmul %b0_ln2, %h0_w_fc : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
  %b0_fc_bias = zt.broadcast_in_dim %h0_b_fc, dims = [2] : (tensor<256xf32>) -> tensor<2x16x256xf32>
  %b0_fc_b = zt.add %b0_fc, %b0_fc_bias : tensor<2x16x256xf32>
  %b0_act = zt.gelu %b0_fc_b : tensor<2x16x256xf32>
  %b0_proj = zt.matmul %b0_act, %h0_w_proj : (tensor<2x16x256xf32>, tensor<256x64xf32>) -> tensor<2x16x64xf32>
  %b0_proj_bias = zt.broadcast_in_dim %h0_b_proj, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
  %b0_proj_b = zt.add %b0_proj, %b0_proj_bias : tensor<2x16x64xf32>
  %b0_proj_d = zt.dropout %b0_proj_b, %step, rate = 0.1, seed = 2 : (tensor<2x16x64xf32>, tensor<i64>) -> tensor<2x16x64xf32>
  %b0_out = zt.add %b0_res1, %b0_proj_d : tensor<2x16x64xf32>

  // Block 1: pre-norm causal self-attention.
  %b1_ln1 = zt.layer_norm %b0_out, %h1_ln1_g, %h1_ln1_b, eps = 1.0e-5 : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %b1_qkv = zt.matmul %b1_ln1, %h1_w_qkv : (tensor<2x16x64xf32>, tensor<64x192xf32>) -> tensor<2x16x192xf32>
  %b1_qkv_bias = zt.broadcast_in_dim %h1_b_qkv, dims = [2] : (tensor<192xf32>) -> tensor<2x16x192xf32>
  %b1_qkv_b = zt.add %b1_qkv, %b1_qkv_bias : tensor<2x16x192xf32>
  %b1_q = zt.slice %b1_qkv_b [0:2, 0:16, 0:64] : (tensor<2x16x192xf32>) -> tensor<2x16x64xf32>
  %b1_q_split = zt.reshape %b1_q : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %b1_q_heads = zt.transpose %b1_q_split, perm = [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %b1_k = zt.slice %b1_qkv_b [0:2, 0:16, 64:128] : (tensor<2x16x192xf32>) -> tensor<2x16x64xf32>
  %b1_k_split = zt.reshape %b1_k : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %b1_k_heads = zt.transpose %b1_k_split, perm = [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %b1_v = zt.slice %b1_qkv_b [0:2, 0:16, 128:192] : (tensor<2x16x192xf32>) -> tensor<2x16x64xf32>
  %b1_v_split = zt.reshape %b1_v : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %b1_v_heads = zt.transpose %b1_v_split, perm = [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %b1_ctx, %b1_lse = zt.attention %b1_q_heads, %b1_k_heads, %b1_v_heads, scale = 0.25 causal : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> (tensor<2x4x16x16xf32>, tensor<2x4x16xf32>)
  %b1_ctx_t = zt.transpose %b1_ctx, perm = [0, 2, 1, 3] : (tensor<2x4x16x16xf32>) -> tensor<2x16x4x16xf32>
  %b1_ctx_m = zt.reshape %b1_ctx_t : (tensor<2x16x4x16xf32>) -> tensor<2x16x64xf32>
  %b1_attn = zt.matmul %b1_ctx_m, %h1_w_o : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  %b1_attn_bias = zt.broadcast_in_dim %h1_b_o, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
  %b1_attn_b = zt.add %b1_attn, %b1_attn_bias : tensor<2x16x64xf32>
  %b1_attn_d = zt.dropout %b1_attn_b, %step, rate = 0.1, seed = 3 : (tensor<2x16x64xf32>, tensor<i64>) -> tensor<2x16x64xf32>
  %b1_res1 = zt.add %b0_out, %b1_attn_d : tensor<2x16x64xf32>
  // Block 1: pre-norm GELU MLP.
  %b1_ln2 = zt.layer_norm %b1_res1, %h1_ln2_g, %h1_ln2_b, eps = 1.0e-5 : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %b1_fc = zt.matmul %b1_ln2, %h1_w_fc : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
  %b1_fc_bias = zt.broadcast_in_dim %h1_b_fc, dims = [2] : (tensor<256xf32>) -> tensor<2x16x256xf32>
  %b1_fc_b = zt.add %b1_fc, %b1_fc_bias : tensor<2x16x256xf32>
  %b1_act = zt.gelu %b1_fc_b : tensor<2x16x256xf32>
  %b1_proj = zt.matmul %b1_act, %h1_w_proj : (tensor<2x16x256xf32>, tensor<256x64xf32>) -> tensor<2x16x64xf32>
  %b1_proj_bias = zt.broadcast_in_dim %h1_b_proj, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
  %b1_proj_b = zt.add %b1_proj, %b1_proj_bias : tensor<2x16x64xf32>
  %b1_proj_d = zt.dropout %b1_proj_b, %step, rate = 0.1, seed = 4 : (tensor<2x16x64xf32>, tensor<i64>) -> tensor<2x16x64xf32>
  %b1_out = zt.add %b1_res1, %b1_proj_d : tensor<2x16x64xf32>

  // Final norm, logits tied to the token embedding (wte^T), mean cross-entropy.
  %lnf = zt.layer_norm %b1_out, %lnf_g, %lnf_b, eps = 1.0e-5 : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %logits = zt.matmul %lnf, %wte {transpose_rhs} : (tensor<2x16x64xf32>, tensor<128x64xf32>) -> tensor<2x16x128xf32>
  %loss = zt.softmax_cross_entropy %logits, %targets : (tensor<2x16x128xf32>, tensor<2x16xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
