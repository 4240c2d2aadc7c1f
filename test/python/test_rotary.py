"""zt.rotary: rotary position embeddings written out in ATen ops
(transformers' Llama, Qwen2 and Mistral `apply_rotary_pos_emb`) import as
one launch per q and k, reading the heads where the projection put them;
its gradient is the transposed map, written in the projection's layout.
The plan trains to PyTorch's losses and gives the bits of the same ops
imported one by one, on the CPU (every memory mode, the f64 reference),
on the emulator and in bf16."""

import copy

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import zcc
import zcc._torch_import as torch_import

from test_torch_import import trains_like_pytorch


def rotate_half(x):
    # transformers' modeling_llama.rotate_half, as written there.
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(h, groups):
    # transformers' modeling_llama.repeat_kv: grouped-query keys and values.
    b, heads, s, d = h.shape
    h = h[:, :, None, :, :].expand(b, heads, groups, s, d)
    return h.reshape(b, heads * groups, s, d)


class RotaryAttention(nn.Module):
    """Causal attention with Llama's rotary embeddings over a sequence of
    `sequence` positions (cos and sin from the positions, buffers); q and k
    rotated with the sum and the products in either order; grouped-query
    keys when `key_heads` < `heads`; `classes` logits from the mean over
    the positions."""

    def __init__(self, width=32, heads=4, key_heads=2, sequence=8,
                 classes=5):
        super().__init__()
        self.heads, self.key_heads = heads, key_heads
        self.dim = width // heads
        self.q = nn.Linear(width, width, bias=False)
        self.k = nn.Linear(width, key_heads * self.dim, bias=False)
        self.v = nn.Linear(width, key_heads * self.dim, bias=False)
        self.o = nn.Linear(width, width, bias=False)
        self.out = nn.Linear(width, classes)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.dim, 2).float()
                                    / self.dim))
        freqs = torch.outer(torch.arange(sequence).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def split(self, y, heads):
        b, s, _ = y.shape
        return y.view(b, s, heads, self.dim).transpose(1, 2)

    def forward(self, x):
        b, s, w = x.shape
        q = self.split(self.q(x), self.heads)
        k = self.split(self.k(x), self.key_heads)
        v = self.split(self.v(x), self.key_heads)
        cos = self.cos[None, None].to(x.dtype)
        sin = self.sin[None, None].to(x.dtype)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (sin * rotate_half(k)) + (k * cos)
        k, v = (repeat_kv(t, self.heads // self.key_heads) for t in (k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = self.o(y.transpose(1, 2).reshape(b, s, w))
        return self.out(y.mean(1))


def batches(count=3, rows=4, sequence=8, width=32, classes=5, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(rows, sequence, width)).astype(np.float32),
             rng.integers(0, classes, size=rows)) for _ in range(count)]


def launches(ir):
    """The kernels of the training step's launches (the first entry; an
    imported model's eval and predict entries follow)."""
    step = ir.split("zplan.entry")[1]
    return [line.split('"')[1] for line in step.splitlines()
            if 'zplan.launch "' in line]


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_written_out_rotary_imports_as_rotary_and_trains_like_pytorch(
        precision, tolerance):
    torch.manual_seed(5)
    run = {}
    trains_like_pytorch(RotaryAttention(), 32, 5, precision, tolerance,
                        ("rotary",), batches=batches(), run=run)
    planned = launches(run["traced"].compile().planned_ir())
    # q's and k's rotations forward, their transposed maps backward; none
    # of the ops they replace, and no copy of the heads around them.
    assert planned.count("rotary") == 4, planned
    for op in ("neg", "concat", "slice", "transpose"):
        assert op not in planned, (op, planned)


def traced_pair(monkeypatch, model, example):
    """`model` imported with its rotary embeddings as zt.rotary, and with
    the same ATen ops imported one by one."""
    x0, y0 = (torch.from_numpy(a) for a in example)
    fused = zcc.from_torch(copy.deepcopy(model), (x0,), (y0,),
                           loss=F.cross_entropy)
    with monkeypatch.context() as m:
        m.setattr(torch_import, "_rotary_parts", lambda node: None)
        apart = zcc.from_torch(copy.deepcopy(model), (x0,), (y0,),
                               loss=F.cross_entropy)
    assert "zt.rotary " in fused.ir() and "zt.rotary " not in apart.ir()
    return fused, apart


def losses(compiled, data, steps=4, **session):
    s = compiled.session(**session)
    return [s.step(*data[i % len(data)]) for i in range(steps)]


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_rotary_gives_the_bits_of_the_ops_it_replaces(monkeypatch, precision):
    torch.manual_seed(6)
    data = batches(seed=1)
    fused, apart = traced_pair(monkeypatch, RotaryAttention(), data[0])
    ours, theirs = (t.compile(optimizer=zcc.adamw(lr=1e-2),
                              precision=precision) for t in (fused, apart))
    ours_launches = launches(ours.planned_ir())
    theirs_launches = launches(theirs.planned_ir())
    assert ours_launches.count("rotary") == 4
    assert len(ours_launches) < len(theirs_launches) - 20, (
        len(ours_launches), len(theirs_launches))
    print(f"{precision}: {len(theirs_launches)} -> {len(ours_launches)} "
          f"launches")
    expected = losses(theirs, data)
    assert losses(ours, data) == expected
    for mode in ("no-reuse", "poison"):
        assert losses(ours, data, mode=mode) == expected
    assert losses(ours, data, device="emulator") == \
        losses(theirs, data, device="emulator")
    if precision == "f32":
        assert losses(ours, data, precision="f64") == \
            losses(theirs, data, precision="f64")
    assert expected[-1] < expected[0]  # it trains: the comparison is not vacuous


def test_other_rotations_stay_written_out(monkeypatch):
    # Halves swapped without the negation, or over a dimension other than
    # the last, are not Llama's rotation: imported op by op, still
    # PyTorch's losses.
    class Unrotated(RotaryAttention):
        def forward(self, x):
            b, s, w = x.shape
            q = self.split(self.q(x), self.heads)
            half = q.shape[-1] // 2
            swapped = torch.cat((q[..., half:], q[..., :half]), dim=-1)
            q = q * self.cos + swapped * self.sin
            y = self.o(q.transpose(1, 2).reshape(b, s, w))
            return self.out(y.mean(1))

    torch.manual_seed(7)
    ir = trains_like_pytorch(Unrotated(), 32, 5, "f64", 1e-9, ("slice",),
                             batches=batches(seed=2))
    assert "zt.rotary " not in ir


def test_rotary_op_from_python_matches_numpy():
    # zcc.ops.rotary on its own (cos and sin broadcast over the heads), and
    # its transposed map, against the formula in NumPy.
    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, 3, 4, 6)).astype(np.float32)
    cos = rng.normal(size=(4, 6)).astype(np.float32)
    sin = rng.normal(size=(4, 6)).astype(np.float32)

    def rotated(v):
        return np.concatenate([-v[..., 3:], v[..., :3]], axis=-1)

    def rotated_back(v):
        return np.concatenate([v[..., 3:], -v[..., :3]], axis=-1)

    for transposed in (False, True):
        def step(x, target):
            c = zcc.param("cos", (4, 6), cos)
            s = zcc.param("sin", (4, 6), sin)
            y = zcc.ops.rotary(x, c, s, transposed=transposed)
            return zcc.ops.mse(y, target)

        expected = (x * cos + rotated_back(x * sin) if transposed
                    else x * cos + rotated(x) * sin)
        compiled = zcc.trace(step, zcc.input(x.shape),
                             zcc.label(x.shape, "float32")).compile()
        # A step's loss is the one before its update.
        loss = compiled.session(precision="f64").step(x, expected)
        assert loss < 1e-12, (transposed, loss)
        zero = compiled.session(precision="f64").step(x, np.zeros_like(x))
        assert zero == pytest.approx(
            float(np.mean(expected.astype(np.float64) ** 2)), rel=1e-6)
