"""Random valid zt training programs and a differential driver.

    python test/python/random_programs.py --count 10000 [--seed 0]

A program is data (a list of instructions over values, printable to
reproduce a failure) with two interpreters: one traces it with zcc.ops, one
evaluates its forward in NumPy (f64, the independent reference). The ops:
every unary elementwise op (inside safe domains), binary ops with NumPy
broadcasting and fan-out to earlier values, matmul (2-D and batched),
layer_norm, rms_norm, batch_norm (training), softmax, log_softmax,
reductions kept and broadcast back, scale, views (reshape, transpose), slice + concat, attention (written
out and causal, or fused zt.attention, causal or not, or causal with a
padding mask: sequences padded on either side, so some queries see no key,
or grouped-query: two query heads sharing one key and value head, or causal
with dropout of the probabilities, or two heads whose q and k are rotated by
rotary position embeddings, zt.rotary reading the heads where the
projection put them),
embedding, dropout, 2-D convolution (over the sequence as channels:
grouped, depthwise, dilated, padded to keep the shape) and max pooling (3x3,
padded); a cross-entropy (some with -100 labels left out by ignore_index)
or mse loss. For each program the driver
checks, on the compiled plan:
  1. planned, no-reuse and poison execution, and the plan compiled without
     recomputation, without fusion and (with attention) with attention's
     operands copied instead of viewed, bit-identical over 3 AdamW steps
     (losses and every parameter);
  2. the first f64 loss against the NumPy reference (1e-9 relative; not for
     programs with dropout, whose masks are zcc's own Philox stream);
  3. f32 against f64: one step's loss and every gradient (1e-3 relative to
     the program's largest gradient);
  4. gradients (the plan compiled with no optimizer) against central finite
     differences of the f64 loss at fixed step (for a few elements, each
     where the differences at h and 2h agree, so no kink lies in between);
  5. bf16 mixed precision (--precision bf16): its planned, no-reuse and
     poison runs bit-identical, and one step's loss and gradients within 3%
     (of the largest gradient) of the f64 ones.
Step 1 also compiles under a memory budget of half the arena (zt-remat):
the same bits; and zt-remat's choice must be a feasible point of the
covering program whose optimum bounds every recompute set's FLOPs from below
(bench/memory/remat_bound.py), its FLOPs at or above that bound.
"""

import argparse
import collections
import math
import os
import re
import sys
import tempfile
import time

import numpy as np

import zcc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench", "memory"))
import remat_bound  # noqa: E402  (zt-remat's lower bound)

UNARY = ["relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "neg",
         "exp_tanh", "log_sq1", "sqrt_sq1", "rsqrt_sq1"]
BINARY = ["add", "sub", "mul", "div_sq1"]


def generate(seed):
    """A random program: a dict of sizes and instructions."""
    rng = np.random.default_rng(seed)
    B = int(rng.choice([2, 3]))
    T = int(rng.choice([3, 4]))
    D = int(rng.choice([4, 6, 8]))
    sequence = bool(rng.random() < 0.5)
    tokens = sequence and bool(rng.random() < 0.5)
    prog = {"seed": seed, "B": B, "T": T, "D": D, "sequence": sequence,
            "tokens": tokens, "V": 7, "C": int(rng.choice([3, 5])),
            "loss": str(rng.choice(["ce", "ce_ignore", "mse"], p=[.55, .15, .3])),
            "params": {},
            "code": []}
    shapes = [[B, T, D] if sequence else [B, D]]  # value 0: the input
    params = prog["params"]

    def new_param(shape):
        name = f"p{len(params)}"
        params[name] = list(shape)
        return name

    def pick(ranks=None):
        # Recent values more often; any earlier value sometimes (fan-out,
        # long lifetimes).
        choices = [i for i, s in enumerate(shapes)
                   if ranks is None or len(s) in ranks]
        if rng.random() < 0.6:
            return choices[-1]
        return int(rng.choice(choices))

    if tokens:
        prog["code"].append(("embedding", new_param([prog["V"], D])))
    for _ in range(int(rng.integers(3, 12))):
        a = pick()
        shape = shapes[a]
        kind = rng.choice(["unary", "binary", "matmul", "norm", "softmax",
                           "reduce", "scale", "view", "slice", "attention",
                           "dropout", "conv", "pool"],
                          p=[.16, .18, .12, .08, .06, .08, .05, .07, .06, .05,
                             .05, .02, .02])
        if kind == "unary":
            op = ("unary", str(rng.choice(UNARY)), a)
        elif kind == "binary":
            same = [i for i, s in enumerate(shapes) if s == shape]
            r = rng.random()
            if r < 0.5:
                other = ("value", int(rng.choice(same)))
            elif r < 0.8:
                other = ("param", new_param([shape[-1]]))
            else:
                other = ("number", float(rng.choice([0.5, 2.0, -1.5])))
            op = ("binary", str(rng.choice(BINARY)), a, other)
        elif kind == "matmul":
            out = int(rng.choice([3, 4, 6, 8]))
            op = ("matmul", a, new_param([shape[-1], out]))
            shape = shape[:-1] + [out]
        elif kind == "norm":
            r = rng.random()
            if r < 0.4:
                op = ("layer_norm", a, new_param([shape[-1]]),
                      new_param([shape[-1]]))
            elif r < 0.8 or math.prod(shape) // shape[1] < 16:
                # BatchNorm over a handful of values per channel is
                # degenerate: bf16's rounding of its input, over the
                # channel's spread, moves its gradients by 10% (the same
                # with it written as element ops).
                op = ("rms_norm", a, new_param([shape[-1]]))
            else:  # training-mode BatchNorm over dimension 1's channels
                op = ("batch_norm", a, new_param([shape[1]]),
                      new_param([shape[1]]))
        elif kind == "softmax":
            op = (str(rng.choice(["softmax", "log_softmax"])), a)
        elif kind == "reduce":
            op = ("reduce", str(rng.choice(["sum", "mean", "max"])), a)
        elif kind == "scale":
            op = ("scale", a, float(rng.choice([0.5, -2.0, 0.125])))
        elif kind == "view":
            op = ("view", a)
        elif kind == "slice":
            if shape[-1] < 2:
                continue
            op = ("slice", a)
        elif kind == "attention":
            if len(shape) != 3:
                continue
            # Written out (matmul, scale, causal_mask, softmax) or fused
            # (zt.attention), causal or not; or grouped-query (2 query
            # heads sharing one key and value head of half the width).
            D = shape[-1]
            mode = str(rng.choice(["written", "fused_causal", "fused",
                                   "fused_padded", "fused_grouped",
                                   "fused_dropout", "fused_rotary"]))
            if (mode == "fused_grouped" and D % 2 or
                    mode == "fused_rotary" and D % 4):
                mode = "fused"
            kv = D // 2 if mode == "fused_grouped" else D
            op = ("attention", a, new_param([D, D]), new_param([D, kv]),
                  new_param([D, kv]), mode)
            if op[-1] == "fused_padded":  # keys [start, end) of each row
                starts = rng.integers(0, T, size=B)
                ends = [int(rng.integers(s + 1, T + 1)) for s in starts]
                op += ([[int(s), e] for s, e in zip(starts, ends)],)
        elif kind == "conv":
            # [B, T, D] as T channels of a 1 x D image (or [B, D] as one):
            # a kernel of width 3 padded to keep D, dilated or not, grouped
            # by 1 or by every channel (depthwise).
            channels = shape[1] if len(shape) == 3 else 1
            groups = int(rng.choice([1, channels]))
            dilation = int(rng.choice([1, 2]))
            op = ("conv", a, new_param([channels, channels // groups, 1, 3]),
                  groups, dilation)
        elif kind == "pool":
            op = ("pool", a)
        else:
            op = ("dropout", a, float(rng.choice([0.1, 0.5])))
        prog["code"].append(op)
        shapes.append(shape)
    prog["head"] = new_param([shapes[-1][-1], prog["C"]])
    return prog


def gelu_tanh_np(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


ERF = np.vectorize(math.erf)


class ZccOps:
    """Builds the program with zcc.ops."""
    ops = zcc.ops

    def unary(self, kind, x):
        o = self.ops
        return {"relu": o.relu, "gelu": lambda v: o.gelu(v),
                "gelu_tanh": lambda v: o.gelu(v, "tanh"), "silu": o.silu,
                "sigmoid": o.sigmoid, "tanh": o.tanh, "neg": o.neg,
                "exp_tanh": lambda v: o.exp(o.tanh(v)),
                "log_sq1": lambda v: o.log(v * v + 1.0),
                "sqrt_sq1": lambda v: o.sqrt(v * v + 1.0),
                "rsqrt_sq1": lambda v: o.rsqrt(v * v + 1.0)}[kind](x)

    def binary(self, kind, a, b):
        if kind == "div_sq1":
            return a / (b * b + 1.0)
        return {"add": a + b, "sub": a - b, "mul": a * b}[kind]

    matmul = staticmethod(lambda a, w: zcc.ops.matmul(a, w))
    layer_norm = staticmethod(lambda x, g, b: zcc.ops.layer_norm(x, g, b, 1e-5))
    rms_norm = staticmethod(lambda x, g: zcc.ops.rms_norm(x, g, 1e-6))

    @staticmethod
    def batch_norm(x, g, b):
        return zcc.ops.batch_norm(x, zcc.ops.batch_norm_stats(x), g, b,
                                  epsilon=1e-5)

    softmax = staticmethod(lambda x: zcc.ops.softmax(x, -1))
    log_softmax = staticmethod(lambda x: zcc.ops.log_softmax(x, -1))

    def reduce(self, kind, x):
        return x - getattr(zcc.ops, kind)(x, -1, True)  # broadcast back

    scale = staticmethod(lambda x, f: zcc.ops.scale(x, f))

    def view(self, x):
        flat = x.reshape(-1)
        y = flat.reshape(*x.shape)
        return y.transpose(0, -1).transpose(0, -1) if x.ndim > 1 else y

    def slice(self, x):
        h = x.shape[-1] // 2
        return zcc.ops.concat([x[..., h:], x[..., :h]], -1)

    def attention(self, x, wq, wk, wv, mode, spans=None):
        q, k, v = x @ wq, x @ wk, x @ wv
        if mode == "fused_padded":
            keep = padding(spans, x.shape[1]).astype(np.int32)
            mask = zcc.ops.ne(zcc.ops.constant(keep, "int32"), 0)
            return zcc.ops.attention(q, k, v, causal=True, mask=mask)
        if mode == "fused_grouped":
            B, T, D = x.shape
            q = zcc.ops.swapaxes(q.reshape(B, T, 2, D // 2), 1, 2)
            k, v = (t.reshape(B, 1, T, D // 2) for t in (k, v))
            y = zcc.ops.attention(q, k, v, causal=True)
            return zcc.ops.swapaxes(y, 1, 2).reshape(B, T, D)
        if mode == "fused_dropout":
            return zcc.ops.attention(q, k, v, causal=True, dropout=0.25)
        if mode == "fused_rotary":  # two heads, q and k rotated in place
            B, T, D = x.shape
            q, k, v = (zcc.ops.swapaxes(t.reshape(B, T, 2, D // 2), 1, 2)
                       for t in (q, k, v))
            cos, sin = (zcc.ops.constant(t) for t in rotary_tables(T, D // 2))
            q, k = (zcc.ops.rotary(t, cos, sin) for t in (q, k))
            y = zcc.ops.attention(q, k, v, causal=True)
            return zcc.ops.swapaxes(y, 1, 2).reshape(B, T, D)
        if mode != "written":
            return zcc.ops.attention(q, k, v, causal=mode == "fused_causal")
        scores = zcc.ops.matmul(q, k, transpose_b=True) * (1 / math.sqrt(x.shape[-1]))
        scores = scores + zcc.ops.causal_mask(x.shape[1])
        return zcc.ops.softmax(scores, -1) @ v

    dropout = staticmethod(lambda x, rate: zcc.ops.dropout(x, rate))
    embedding = staticmethod(lambda table, tokens: zcc.ops.embedding(table, tokens))

    @staticmethod
    def conv(x, w, groups, dilation):
        image = x.reshape(x.shape[0], w.shape[0], 1, x.shape[-1])
        y = zcc.ops.conv2d(image, w, stride=[1, 1], padding=[0, dilation],
                           dilation=[1, dilation], groups=groups)
        return y.reshape(*x.shape)

    @staticmethod
    def pool(x):
        image = x.reshape(x.shape[0], 1, -1, x.shape[-1])
        y = zcc.ops.max_pool2d(image, kernel_size=[3, 3], stride=[1, 1],
                               padding=[1, 1], dilation=[1, 1])
        return y.reshape(*x.shape)

    def loss(self, kind, logits, target):
        if kind == "ce":
            return zcc.ops.cross_entropy(logits, target)
        if kind == "ce_ignore":
            return zcc.ops.cross_entropy(logits, target, ignore_index=-100)
        return zcc.ops.mse(logits, target)


def rotary_tables(T, d):
    """Llama's cos and sin of positions 0 .. T-1 for heads of d, in f32."""
    inv_freq = 1.0 / 10000 ** (np.arange(0, d, 2) / d)
    freqs = np.outer(np.arange(T), inv_freq)
    emb = np.concatenate([freqs, freqs], -1)
    return np.cos(emb).astype(np.float32), np.sin(emb).astype(np.float32)


def padding(spans, T):
    """[B, 1, T]: true at the keys [start, end) of each row."""
    keys = np.arange(T)
    return np.array([[(keys >= s) & (keys < e)] for s, e in spans])


class NumpyOps:
    """The same program's forward in NumPy, f64."""

    def unary(self, kind, x):
        return {"relu": lambda v: np.maximum(v, 0),
                "gelu": lambda v: 0.5 * v * (1 + ERF(v / math.sqrt(2))),
                "gelu_tanh": gelu_tanh_np, "silu": lambda v: v / (1 + np.exp(-v)),
                "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh,
                "neg": lambda v: -v, "exp_tanh": lambda v: np.exp(np.tanh(v)),
                "log_sq1": lambda v: np.log(v * v + 1),
                "sqrt_sq1": lambda v: np.sqrt(v * v + 1),
                "rsqrt_sq1": lambda v: 1 / np.sqrt(v * v + 1)}[kind](x)

    def binary(self, kind, a, b):
        if kind == "div_sq1":
            return a / (b * b + 1)
        return {"add": a + b, "sub": a - b, "mul": a * b}[kind]

    matmul = staticmethod(lambda a, w: a @ w)

    @staticmethod
    def layer_norm(x, g, b):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5) * g + b

    @staticmethod
    def rms_norm(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g

    @staticmethod
    def batch_norm(x, g, b):
        axes = (0,) + tuple(range(2, x.ndim))
        mean = x.mean(axes, keepdims=True)
        var = ((x - mean) ** 2).mean(axes, keepdims=True)
        channel = [1, x.shape[1]] + [1] * (x.ndim - 2)
        return ((x - mean) / np.sqrt(var + 1e-5) * g.reshape(channel)
                + b.reshape(channel))

    @staticmethod
    def softmax(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    @staticmethod
    def log_softmax(x):
        m = x.max(-1, keepdims=True)
        return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))

    def reduce(self, kind, x):
        return x - getattr(np, {"sum": "sum", "mean": "mean", "max": "max"}[kind])(
            x, axis=-1, keepdims=True)

    scale = staticmethod(lambda x, f: x * f)
    view = staticmethod(lambda x: x)

    def slice(self, x):
        h = x.shape[-1] // 2
        return np.concatenate([x[..., h:], x[..., :h]], -1)

    def attention(self, x, wq, wk, wv, mode, spans=None):
        q, k, v = x @ wq, x @ wk, x @ wv
        T = x.shape[1]
        if mode == "fused_grouped":  # both query heads read the one k, v
            B, D = x.shape[0], x.shape[-1]
            q = q.reshape(B, T, 2, D // 2).transpose(0, 2, 1, 3)
            k, v = k[:, None], v[:, None]
            scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(D // 2)
            scores = scores + np.triu(np.full((T, T), -np.inf), 1)
            y = self.softmax(scores) @ v
            return y.transpose(0, 2, 1, 3).reshape(B, T, D)
        if mode == "fused_rotary":
            B, D = x.shape[0], x.shape[-1]
            d = D // 2
            q, k, v = (t.reshape(B, T, 2, d).transpose(0, 2, 1, 3)
                       for t in (q, k, v))
            cos, sin = (t.astype(np.float64) for t in rotary_tables(T, d))

            def rotate(t):
                half = np.concatenate([-t[..., d // 2:], t[..., :d // 2]], -1)
                return t * cos + half * sin
            scores = rotate(q) @ np.swapaxes(rotate(k), -1, -2) / math.sqrt(d)
            scores = scores + np.triu(np.full((T, T), -np.inf), 1)
            y = self.softmax(scores) @ v
            return y.transpose(0, 2, 1, 3).reshape(B, T, D)
        scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(x.shape[-1])
        if mode != "fused":
            scores = scores + np.triu(np.full((T, T), -np.inf), 1)
        if mode == "fused_padded":
            scores = np.where(padding(spans, T), scores, -np.inf)
            # A query that sees no key gives 0 (as PyTorch's SDPA).
            blind = np.isneginf(scores).all(-1, keepdims=True)
            return np.where(blind, 0.0,
                            self.softmax(np.where(blind, 0.0, scores))) @ v
        return self.softmax(scores) @ v

    dropout = None  # zcc's Philox masks: no NumPy reference
    embedding = staticmethod(lambda table, tokens: table[tokens])

    @staticmethod
    def conv(x, w, groups, dilation):
        channels, width = w.shape[0], x.shape[-1]
        image = x.reshape(x.shape[0], channels, width)
        padded = np.pad(image, ((0, 0), (0, 0), (dilation, dilation)))
        per = channels // groups
        y = np.zeros_like(image)
        for o in range(channels):
            g = o // per
            for c in range(per):
                for s in range(3):
                    y[:, o] += w[o, c, 0, s] * padded[
                        :, g * per + c, s * dilation:s * dilation + width]
        return y.reshape(x.shape)

    @staticmethod
    def pool(x):
        image = x.reshape(x.shape[0], -1, x.shape[-1])
        padded = np.pad(image, ((0, 0), (1, 1), (1, 1)),
                        constant_values=-np.inf)
        rows, cols = image.shape[1:]
        windows = [padded[:, r:r + rows, s:s + cols]
                   for r in range(3) for s in range(3)]
        return np.max(windows, axis=0).reshape(x.shape)

    def loss(self, kind, logits, target):
        if kind in ("ce", "ce_ignore"):
            kept = target != -100
            return float(-self.log_softmax(logits[kept])[
                np.arange(kept.sum()), target[kept]].mean())
        return float(((logits - target) ** 2).mean())


def run(prog, impl, x, params, target):
    """The program's loss through `impl` (ZccOps or NumpyOps)."""
    values = [x]
    for op in prog["code"]:
        name = op[0]
        if name == "embedding":
            values[0] = impl.embedding(params[op[1]], x)
            continue
        a = values[op[2] if name in ("unary", "binary", "reduce") else op[1]]
        if name == "unary":
            y = impl.unary(op[1], a)
        elif name == "binary":
            src, ref = op[3]
            b = values[ref] if src == "value" else params[ref] if src == "param" else ref
            y = impl.binary(op[1], a, b)
        elif name == "matmul":
            y = impl.matmul(a, params[op[2]])
        elif name == "layer_norm":
            y = impl.layer_norm(a, params[op[2]], params[op[3]])
        elif name == "rms_norm":
            y = impl.rms_norm(a, params[op[2]])
        elif name == "batch_norm":
            y = impl.batch_norm(a, params[op[2]], params[op[3]])
        elif name in ("softmax", "log_softmax"):
            y = getattr(impl, name)(a)
        elif name == "reduce":
            y = impl.reduce(op[1], a)
        elif name == "scale":
            y = impl.scale(a, op[2])
        elif name == "view":
            y = impl.view(a)
        elif name == "slice":
            y = impl.slice(a)
        elif name == "attention":
            y = impl.attention(a, *(params[p] for p in op[2:5]), *op[5:])
        elif name == "dropout":
            y = impl.dropout(a, op[2])
        elif name == "conv":
            y = impl.conv(a, params[op[2]], op[3], op[4])
        elif name == "pool":
            y = impl.pool(a)
        values.append(y)
    last = values[-1]
    flat = last.reshape(-1, last.shape[-1])
    return impl.loss(prog["loss"], impl.matmul(flat, params[prog["head"]]), target)


def initial_values(prog):
    rng = np.random.default_rng(prog["seed"] + 1)
    return {name: (rng.normal(size=shape) * (0.5 if len(shape) > 1 else 1.0)
                   + (1.0 if len(shape) == 1 else 0.0)).astype(np.float32)
            for name, shape in prog["params"].items()}


def feeds(prog, step):
    rng = np.random.default_rng(prog["seed"] * 1000 + step)
    B, T, D = prog["B"], prog["T"], prog["D"]
    shape = [B, T] if prog["sequence"] else [B]
    if prog["tokens"]:
        x = rng.integers(0, prog["V"], size=shape).astype(np.int32)
    else:
        x = rng.normal(size=shape + [D]).astype(np.float32)
    rows = int(np.prod(shape))
    if prog["loss"] in ("ce", "ce_ignore"):
        target = rng.integers(0, prog["C"], size=rows).astype(np.int32)
        if prog["loss"] == "ce_ignore":  # some rows left out, never all
            target[rng.random(rows) < 0.4] = -100
            target[rng.integers(rows)] = rng.integers(prog["C"])
    else:
        target = rng.normal(size=(rows, prog["C"])).astype(np.float32)
    return x, target


def trace(prog):
    values = initial_values(prog)
    B, T, D = prog["B"], prog["T"], prog["D"]
    shape = [B, T] if prog["sequence"] else [B]
    rows = int(np.prod(shape))
    x_spec = (zcc.input(shape, "int32") if prog["tokens"]
              else zcc.input(shape + [D]))
    target_spec = (zcc.label((rows,), "int32") if prog["loss"] != "mse"
                   else zcc.label((rows, prog["C"]), "float32"))

    def step(x, target):
        params = {name: zcc.param(name, value.shape, init=value)
                  for name, value in values.items()}
        return run(prog, ZccOps(), x, params, target)

    step.__name__ = f"random_{prog['seed']}"
    return zcc.trace(step, x=x_spec, target=target_spec), values


def bf16_rounded(array):
    """`array` rounded to bf16 (to nearest, ties to even), as f32."""
    bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32)
    bits = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) \
        & np.uint32(0xFFFF0000)
    return bits.view(np.float32)


def mode_runs(compiled, prog, values, steps, problems, what):
    """Runs `compiled` planned, no-reuse and poison for `steps` steps and
    returns {mode: (losses, final parameter bytes)}; a mode that differs
    from planned is a problem."""
    runs = {}
    for mode in ("planned", "no-reuse", "poison"):
        session = compiled.session(mode=mode, threads=1)
        losses = [session.step(*feeds(prog, s)) for s in range(steps)]
        runs[mode] = (losses, [session.read(n).tobytes() for n in values])
    for mode in ("no-reuse", "poison"):
        if runs[mode] != runs["planned"]:
            problems.append(f"{what}{mode} differs from planned: "
                            f"{runs[mode][0]} vs {runs['planned'][0]}")
    return runs


def remat_bound_problems(problem):
    """zt-remat's choice against the lower bound's program: a feasible point
    (or the bound's model is wrong), at or above its optimum."""
    out = []
    for entry in problem["entries"]:
        wrong = remat_bound.violations(entry)
        if wrong:
            out.append(f"zt-remat's choice breaks the bound's program: {wrong[:3]}")
        if wrong or entry["zcc"]["exhausted"]:
            continue
        solved = remat_bound.solve(entry, time_limit=10)
        if solved is None or solved["bound"] > entry["zcc"]["flops"] * (1 + 1e-9):
            out.append(f"remat bound {solved} above zt-remat's "
                       f"{entry['zcc']['flops']} FLOPs")
    return out


def check(prog, plant_bug=False, steps=3, fd_points=3, stats=None):
    """Returns a list of mismatch messages (empty: all agree). `stats`, a
    Counter, counts finite-difference points passed over as unreliable."""
    problems = []
    traced, values = trace(prog)
    # greedy-best: the exact search (auto) may spend seconds proving a small
    # plan optimal; what is checked here holds for any valid placement.
    compiled = traced.compile(optimizer=zcc.adamw(lr=1e-2), algorithm="greedy-best",
                              test_plant_in_place_bug=plant_bug)
    has_dropout = any(op[0] == "dropout" or op[0] == "attention" and
                      op[5] == "fused_dropout" for op in prog["code"])

    # 1. The three modes, bit for bit.
    runs = mode_runs(compiled, prog, values, steps, problems, "")
    # ... and without zt-autodiff's recomputation (the same bits: a
    # recomputed value is the same kernel on the same operands).
    kept = traced.compile(optimizer=zcc.adamw(lr=1e-2), algorithm="greedy-best",
                          recompute=False).session(threads=1)
    losses = [kept.step(*feeds(prog, s)) for s in range(steps)]
    if (losses, [kept.read(n).tobytes() for n in values]) != runs["planned"]:
        problems.append(f"recompute=False differs: {losses} vs "
                        f"{runs['planned'][0]}")
    # ... and without zt-fuse-elementwise and zt-fuse-classifier (each step
    # of a fused program is rounded as its op stored it, and the fused loss
    # computes each row as the two kernels do: the same bits).
    unfused = traced.compile(optimizer=zcc.adamw(lr=1e-2),
                             algorithm="greedy-best", fuse_elementwise=False,
                             fuse_classifier=False).session(threads=1)
    losses = [unfused.step(*feeds(prog, s)) for s in range(steps)]
    if (losses, [unfused.read(n).tobytes() for n in values]) != runs["planned"]:
        problems.append(f"fuse_elementwise=False, fuse_classifier=False "
                        f"differs: {losses} vs {runs['planned'][0]}")
    # ... and with attention's operands copied instead of read and written
    # through views (the same products: the same bits).
    if any(op[0] == "attention" for op in prog["code"]):
        copied = traced.compile(optimizer=zcc.adamw(lr=1e-2),
                                algorithm="greedy-best",
                                attention_views=False).session(threads=1)
        losses = [copied.step(*feeds(prog, s)) for s in range(steps)]
        if (losses, [copied.read(n).tobytes() for n in values]) != \
                runs["planned"]:
            problems.append(f"attention_views=False differs: {losses} vs "
                            f"{runs['planned'][0]}")
    # ... and under a memory budget (zt-remat recomputes more, matmuls and
    # chains of ops included: the same bits again). Half the arena is often
    # below what recomputation reaches: then the error names the smallest
    # arena, which must itself compile and fit.
    arena = compiled.memory_analysis()["arena"]
    with tempfile.TemporaryDirectory() as tmp:
        problem = os.path.join(tmp, "remat.json")
        try:
            tight = traced.compile(optimizer=zcc.adamw(lr=1e-2),
                                   algorithm="greedy-best",
                                   memory_budget=arena // 2,
                                   remat_problem=problem)
        except zcc.Error as e:
            found = re.search(r"recomputation reaches: (\d+) bytes", str(e))
            if not found:
                raise
            smallest = int(found.group(1))
            tight = traced.compile(optimizer=zcc.adamw(lr=1e-2),
                                   algorithm="greedy-best",
                                   memory_budget=smallest, remat_problem=problem)
            if tight.memory_analysis()["arena"] > smallest:
                problems.append(f"the smallest arena {smallest} does not fit")
        problems += remat_bound_problems(remat_bound.load(problem))
    session = tight.session(threads=1)
    losses = [session.step(*feeds(prog, s)) for s in range(steps)]
    if (losses, [session.read(n).tobytes() for n in values]) != runs["planned"]:
        problems.append(f"memory budget differs: {losses} vs "
                        f"{runs['planned'][0]}")

    # 2. The NumPy reference.
    wide = compiled.session(precision="f64")
    wide_losses = [wide.step(*feeds(prog, 0))]
    if not has_dropout:
        x, target = feeds(prog, 0)
        params = {n: v.astype(np.float64) for n, v in values.items()}
        reference = run(prog, NumpyOps(), x if prog["tokens"] else x.astype(np.float64),
                        params, target if prog["loss"] != "mse" else target.astype(np.float64))
        if not abs(wide_losses[0] - reference) <= 1e-9 * max(1.0, abs(reference)):
            problems.append(f"f64 loss {wide_losses[0]!r} vs NumPy {reference!r}")

    # 4. Gradients against finite differences, at a fixed step.
    grads = traced.compile(optimizer=None, algorithm="greedy-best",
                           test_plant_in_place_bug=plant_bug)
    session = grads.session(precision="f64")
    x, target = feeds(prog, 0)
    base = session.step(x, target)

    # 3. f32 against f64: the loss and every gradient of one step. (Not
    # after AdamW updates: its m / sqrt(v) turns rounding noise in a
    # near-zero gradient into a full step, so trajectories part by design.)
    # Gradients are compared normwise: an error relative to the largest
    # gradient of the program (a parameter whose own gradient is ~0 next to
    # others of ~100, as behind a saturated softmax, carries f32 rounding
    # of the large ones).
    narrow = grads.session(precision="f32")
    loss32 = narrow.step(x, target)
    if not abs(loss32 - base) <= 1e-3 * max(1.0, abs(base)):
        problems.append(f"f32 loss {loss32!r} vs f64 {base!r}")
    wide_grads = {name: session.read(name + ".grad") for name in values}
    scale = max([1.0] + [float(np.abs(g).max()) for g in wide_grads.values()])
    for name in sorted(values):
        g64 = wide_grads[name]
        g32 = narrow.read(name + ".grad")
        if not np.all(np.abs(g32 - g64) <= 1e-3 * scale):
            problems.append(f"f32 gradient of {name} differs from f64 by "
                            f"{float(np.abs(g32 - g64).max())!r} (scale {scale})")
    rng = np.random.default_rng(prog["seed"] + 7)

    def loss_at(name, w, i, delta):
        moved = w.copy()
        moved[i] += delta
        session.write(name, moved.reshape(values[name].shape))
        session.step_count = 0
        return session.step(x, target)

    for name in rng.choice(sorted(values), size=min(fd_points, len(values)),
                           replace=False):
        # Read before any finite-difference step moves a parameter.
        analytic = wide_grads[name].reshape(-1)
        w = values[name].astype(np.float64).reshape(-1)
        # A point where central differences at h and 2h agree: elsewhere a
        # kink (relu, max) or extreme curvature lies within 2h, and finite
        # differences there test nothing. Up to 5 points per parameter.
        for _ in range(5):
            i = int(rng.integers(analytic.size))
            h = 1e-6
            fd = [(loss_at(name, w, i, k * h) - loss_at(name, w, i, -k * h)) / (2 * k * h)
                  for k in (1, 2)]
            tolerance = 1e-5 * max(1.0, abs(fd[0])) + 1e-7
            if abs(fd[0] - fd[1]) <= tolerance:
                break
            if stats is not None:
                stats["fd_unreliable"] += 1
        else:
            session.write(name, w.reshape(values[name].shape))
            continue
        session.write(name, w.reshape(values[name].shape))
        if not abs(fd[0] - analytic[i]) <= tolerance:
            problems.append(f"d loss / d {name}[{i}]: {analytic[i]!r}, finite "
                            f"differences {fd[0]!r}")

    # 5. bf16 mixed precision (products read bf16 and write bf16, element
    # ops after them store bf16): its three modes give the same bits, and one
    # step's loss and gradients are the f64 ones' within bf16's error (each
    # stored value rounded to 8 bits, 2^-9 relative; 3% of the largest
    # gradient leaves room for a chain of them and a softmax or division
    # downstream), plus three times the program's own sensitivity: how far its
    # gradients move when its parameters are moved by 2^-8 of themselves
    # (each up or down at random, then each the other way), in f64, and in
    # bf16, where rounding can make a tie for a max or leave only noise
    # after a cancellation that a normalization then scales up; a tie that
    # one move keeps, the opposite move breaks.
    # A wrong rule moves nothing, so it still shows. A program whose
    # sensitivity is over 10% of the largest gradient is not compared, and
    # is counted.
    mixed = traced.compile(optimizer=zcc.adamw(lr=1e-2), algorithm="greedy-best",
                           precision="bf16", test_plant_in_place_bug=plant_bug)
    mode_runs(mixed, prog, values, steps, problems, "bf16 ")
    grads16 = traced.compile(optimizer=None, algorithm="greedy-best",
                             precision="bf16").session()
    loss16 = grads16.step(x, target)
    g16 = {n: grads16.read(n + ".grad") for n in values}
    rng = np.random.default_rng(prog["seed"])
    signs = {n: rng.choice([-1.0, 1.0], v.shape) for n, v in values.items()}
    sensitivity, loss_sensitivity = 0.0, 0.0
    for way in (1.0, -1.0):
        for probe, grads, loss in ((session, wide_grads, base),
                                   (grads16, g16, loss16)):
            for name, v in values.items():
                probe.write(name, v * (1 + way * 2.0 ** -8 * signs[name]))
            probe.step_count = 0
            moved_loss = probe.step(x, target)
            loss_sensitivity = max(loss_sensitivity, abs(moved_loss - loss))
            sensitivity = max([sensitivity] + [
                float(np.abs(probe.read(n + ".grad") - grads[n]).max())
                for n in values])
    if sensitivity > 1e-1 * scale:
        if stats is not None:
            stats["bf16_sensitive"] += 1
        return problems
    if not abs(loss16 - base) <= 3e-2 * max(1.0, abs(base)) + 3 * loss_sensitivity:
        problems.append(f"bf16 loss {loss16!r} vs f64 {base!r}")
    bound = 3e-2 * scale + 3 * sensitivity
    for name in sorted(values):
        if not np.all(np.abs(g16[name] - wide_grads[name]) <= bound):
            problems.append(f"bf16 gradient of {name} differs from f64 by "
                            f"{float(np.abs(g16[name] - wide_grads[name]).max())!r} "
                            f"(scale {scale}, sensitivity {sensitivity})")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plant-bug", action="store_true",
                        help="compile with the planted in-place bug")
    args = parser.parse_args()
    start = time.perf_counter()
    failures = 0
    stats = collections.Counter()
    for seed in range(args.seed, args.seed + args.count):
        prog = generate(seed)
        problems = check(prog, plant_bug=args.plant_bug, stats=stats)
        if problems:
            failures += 1
            print(f"program {seed}: {len(prog['code'])} ops: {problems[0]}")
            print(f"  {prog}")
    print(f"{args.count} programs (seeds {args.seed}..{args.seed + args.count - 1}), "
          f"{failures} with mismatches, {time.perf_counter() - start:.1f} s; "
          f"{stats['fd_unreliable']} finite-difference points passed over "
          "(h and 2h disagree: a kink or extreme curvature nearby); "
          f"{stats['bf16_sensitive']} programs' bf16 gradients not compared "
          "(moving the parameters by 2^-8 moves the f64 or bf16 gradients by "
          "over 10%)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
