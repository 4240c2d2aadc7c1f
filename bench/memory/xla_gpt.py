"""The memory benchmark's GPT as one jitted JAX training step, for XLA's
own account of the bytes it plans: examples/python/nanogpt.py's model
(pre-norm blocks, causal attention through jax.nn.dot_product_attention,
exact GELU, tied embeddings, cross-entropy) and AdamW with its state
donated, so updates are in place as PyTorch's and zcc's are.

xla_step_bytes(config) lowers and compiles the step for the CPU backend
from shapes alone (nothing is computed) and returns
compile().memory_analysis(): temp_size_in_bytes is XLA's step memory (every
activation, gradient and temporary), the quantity zcc's arena is.
"""

import jax
import jax.numpy as jnp


def _layer_norm(x, g, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * g + b


def _block(x, p, heads):
    B, T, C = x.shape
    h = _layer_norm(x, p["ln_1.g"], p["ln_1.b"])
    qkv = h @ p["attn.qkv.w"] + p["attn.qkv.b"]
    q, k, v = (t.reshape(B, T, heads, C // heads) for t in jnp.split(qkv, 3, -1))
    y = jax.nn.dot_product_attention(q, k, v, is_causal=True).reshape(B, T, C)
    x = x + y @ p["attn.proj.w"] + p["attn.proj.b"]
    h = _layer_norm(x, p["ln_2.g"], p["ln_2.b"])
    h = jax.nn.gelu(h @ p["mlp.fc.w"] + p["mlp.fc.b"], approximate=False)
    return x + h @ p["mlp.proj.w"] + p["mlp.proj.b"]


def _loss(params, tokens, targets, heads):
    T = tokens.shape[1]
    x = params["wte"][tokens] + params["wpe"][:T]
    for p in params["h"]:
        x = _block(x, p, heads)
    x = _layer_norm(x, params["ln_f.g"], params["ln_f.b"])
    logits = x @ params["wte"].T  # tied
    logp = jax.nn.log_softmax(logits, -1)
    return -jnp.take_along_axis(logp, targets[..., None], -1).mean()


def _adamw(params, grads, state, lr=3e-4, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
    m, v, t = state
    t = t + 1
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    params = jax.tree.map(
        lambda p, m, v: p - lr * (m / c1 / (jnp.sqrt(v / c2) + eps) + wd * p),
        params, m, v)
    return params, (m, v, t)


def _shapes(config):
    layers, width, heads, sequence, batch, vocab = config
    f = lambda *s: jax.ShapeDtypeStruct(s, jnp.float32)
    block = {"ln_1.g": f(width), "ln_1.b": f(width),
             "attn.qkv.w": f(width, 3 * width), "attn.qkv.b": f(3 * width),
             "attn.proj.w": f(width, width), "attn.proj.b": f(width),
             "ln_2.g": f(width), "ln_2.b": f(width),
             "mlp.fc.w": f(width, 4 * width), "mlp.fc.b": f(4 * width),
             "mlp.proj.w": f(4 * width, width), "mlp.proj.b": f(width)}
    params = {"wte": f(vocab, width), "wpe": f(sequence, width),
              "h": [dict(block) for _ in range(layers)],
              "ln_f.g": f(width), "ln_f.b": f(width)}
    state = (params, params, jax.ShapeDtypeStruct((), jnp.int32))
    tokens = jax.ShapeDtypeStruct((batch, sequence), jnp.int32)
    return params, state, tokens


def xla_step_bytes(config):
    """XLA's memory_analysis() of the compiled training step."""
    heads = config[2]
    params, state, tokens = _shapes(config)

    def step(params, state, tokens, targets):
        loss, grads = jax.value_and_grad(_loss)(params, tokens, targets, heads)
        params, state = _adamw(params, grads, state)
        return params, state, loss

    compiled = jax.jit(step, donate_argnums=(0, 1)).lower(
        params, state, tokens, tokens).compile()
    return compiled.memory_analysis()


if __name__ == "__main__":
    import sys
    config = tuple(int(v) for v in sys.argv[1].split(","))
    print(xla_step_bytes(config))
