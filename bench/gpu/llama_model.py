"""The Llama-style model of the GPU benchmark (issue 48): transformers'
LlamaForCausalLM (grouped-query attention on SDPA, rotary embeddings,
RMSNorm, the SiLU-gated MLP), built the same way for zcc (model_plans.py
--bench, through zcc.from_torch) and for PyTorch (torch_bench.py --model
llama), so both time one model.

SIZES is "L,D,H,KV,F,T,V": layers, width, query heads, key/value heads, MLP
width, sequence, vocabulary. The default is GPT-2 small's width and depth
with Llama's parts: 12 layers of width 768, 12 query heads on 4 key/value
heads, MLP 2048, sequence 1024, vocabulary 32000, batch 8.
"""

DEFAULT_SIZES = "12,768,12,4,2048,1024,32000"
DEFAULT_BATCH = 8


def parse_sizes(text):
    """(layers, width, heads, kv_heads, ffn, seq, vocab) from "L,D,H,KV,F,T,V";
    ValueError naming the rule a size breaks."""
    try:
        sizes = [int(v) for v in text.split(",")]
    except ValueError:
        raise ValueError("sizes must be integers") from None
    if len(sizes) != 7 or min(sizes) < 1:
        raise ValueError("L,D,H,KV,F,T,V: seven positive integers")
    layers, width, heads, kv, ffn, seq, vocab = sizes
    if width % heads or heads % kv:
        raise ValueError("D must be a multiple of H, and H of KV")
    return tuple(sizes)


def build(sizes):
    """The module (ids [B, T] -> logits [B T, V]) at `sizes`, seeded; on the
    CPU (callers move it)."""
    import torch
    import transformers

    layers, width, heads, kv, ffn, seq, vocab = parse_sizes(sizes)

    class Logits(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, ids):
            return self.model(ids).logits.flatten(0, 1)

    config = transformers.LlamaConfig(
        vocab_size=vocab, hidden_size=width, intermediate_size=ffn,
        num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=kv, max_position_embeddings=seq,
        attention_dropout=0.0, use_cache=False, attn_implementation="sdpa")
    torch.manual_seed(0)
    return Logits(transformers.LlamaForCausalLM(config))
