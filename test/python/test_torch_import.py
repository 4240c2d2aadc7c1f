"""zcc.from_torch against PyTorch's own training of the same module."""

import copy
import math
import os
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import zcc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "examples", "python"))
import nanogpt  # noqa: E402


def small_gpt():
    """The GPT the training comparisons use (2 layers, width 64, vocabulary
    128, 16 positions; seeded) and its 4 batches of 4 sequences."""
    torch.manual_seed(0)
    return (nanogpt.GPT(vocab=128, sequence=16, width=64, heads=4, layers=2),
            nanogpt.batches(4, batch=4, sequence=16, vocab=128))


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_gpt_trains_like_pytorch(precision, tolerance):
    model, data = small_gpt()
    ours, theirs, compiled, _ = nanogpt.train_both(model, data, 20,
                                                   precision=precision)
    relative = np.abs(np.array(ours) - theirs) / np.abs(theirs)
    assert relative.max() < tolerance, list(zip(ours, theirs))
    assert theirs[-1] < theirs[0]  # it learns: the comparison is not vacuous
    memory = compiled.memory_analysis()
    assert memory["arena"] == memory["lower_bound"]


@pytest.mark.parametrize("sgd", [False, True], ids=["adamw", "sgd"])
@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_clipped_gradients_train_like_clip_grad_norm(sgd, precision, tolerance):
    # compile(clip_grad_norm=) against torch.nn.utils.clip_grad_norm_
    # between backward() and step().
    model, data = small_gpt()
    lr, clip = (0.3, 0.5) if sgd else (3e-3, 0.5)
    norms = []
    ours, theirs, _, _ = nanogpt.train_both(model, data, 20, lr=lr, sgd=sgd,
                                            precision=precision,
                                            clip_grad_norm=clip, norms=norms)
    relative = np.abs(np.array(ours) - theirs) / np.abs(theirs)
    assert relative.max() < tolerance, list(zip(ours, theirs))
    # The step's grad_norm output is clip_grad_norm_'s return value.
    our_norms, their_norms = np.array(norms).T
    np.testing.assert_allclose(our_norms, their_norms, rtol=tolerance)
    # Not vacuous: the norm exceeds the limit, and unclipped training
    # ends elsewhere.
    assert sum(n > clip for n in their_norms) >= 10, norms
    unclipped, _, _, _ = nanogpt.train_both(model, data, 20, lr=lr, sgd=sgd,
                                            precision=precision)
    apart = np.abs(np.array(unclipped) - theirs) / np.abs(theirs)
    assert apart.max() > 100 * tolerance, list(zip(unclipped, theirs))


@pytest.mark.parametrize("decay", ["cosine", "linear"])
@pytest.mark.parametrize("sgd", [False, True], ids=["adamw", "sgd"])
@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_lr_schedule_trains_like_lambda_lr(decay, sgd, precision, tolerance):
    # compile(lr_schedule=) against a LambdaLR of nanoGPT's get_lr stepped
    # after each optimizer.step(): 4 warmup steps, decay to min_lr at step
    # 14, then 6 steps at min_lr.
    model, data = small_gpt()
    lr = 0.3 if sgd else 3e-3
    schedule = dict(warmup_steps=4, decay=decay, decay_steps=14,
                    min_lr=lr / 10)
    lrs = []
    ours, theirs, _, _ = nanogpt.train_both(
        model, data, 20, lr=lr, sgd=sgd, precision=precision,
        clip_grad_norm=0.5 if sgd else None, schedule=schedule, lrs=lrs)
    relative = np.abs(np.array(ours) - theirs) / np.abs(theirs)
    assert relative.max() < tolerance, list(zip(ours, theirs))
    # The step's lr output is the rate PyTorch's scheduler gave that step.
    our_lrs, their_lrs = np.array(lrs).T
    # f32: lr and the factor each rounded to f32, then their product.
    np.testing.assert_allclose(our_lrs, their_lrs,
                               rtol=1e-15 if precision == "f64" else 2e-7)
    assert their_lrs[0] == pytest.approx(lr / 5)
    assert their_lrs[4] == pytest.approx(lr)
    assert their_lrs[14] == pytest.approx(lr / 10)
    assert their_lrs[19] == pytest.approx(lr / 10)
    # Not vacuous: at the constant lr training ends elsewhere.
    constant, _, _, _ = nanogpt.train_both(
        model, data, 20, lr=lr, sgd=sgd, precision=precision,
        clip_grad_norm=0.5 if sgd else None)
    apart = np.abs(np.array(constant) - theirs) / np.abs(theirs)
    assert apart.max() > 100 * tolerance, list(zip(constant, theirs))


@pytest.mark.parametrize("sgd", [False, True], ids=["adamw", "sgd"])
@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_nanogpt_recipe_trains_like_pytorch(sgd, precision, tolerance):
    # nanoGPT's train.py: weight decay 0.1 on parameters of 2 or more
    # dimensions only (configure_optimizers' groups), betas (0.9, 0.95),
    # gradients clipped at 1.0, warmup then cosine decay to lr / 10.
    model, data = small_gpt()
    lr = 0.3 if sgd else 3e-3
    recipe = dict(lr=lr, sgd=sgd, precision=precision, clip_grad_norm=1.0,
                  schedule=dict(warmup_steps=4, decay="cosine",
                                decay_steps=16, min_lr=lr / 10),
                  weight_decay=0.1, betas=(0.9, 0.95))
    ours, theirs, _, _ = nanogpt.train_both(model, data, 20, decay_min_rank=2,
                                            **recipe)
    relative = np.abs(np.array(ours) - theirs) / np.abs(theirs)
    assert relative.max() < tolerance, list(zip(ours, theirs))
    # Not vacuous: decaying every parameter too ends 100 times farther
    # from PyTorch's groups than zcc's groups do.
    everything, _, _, _ = nanogpt.train_both(model, data, 20, **recipe)
    apart = np.abs(np.array(everything) - theirs) / np.abs(theirs)
    assert apart.max() > 100 * relative.max(), list(zip(everything, theirs))


def test_gpt_parameters_keep_pytorch_names_and_values():
    torch.manual_seed(1)
    model = nanogpt.GPT(layers=1)
    x, y = (torch.from_numpy(a) for a in nanogpt.batches(1, 2, 16, 128)[0])
    traced = zcc.from_torch(model, (x,), (y,), loss=nanogpt.lm_loss)
    names = dict(model.named_parameters())  # tied weights once, first name
    assert sorted(traced.parameters) == sorted(names)
    assert "lm_head.weight" not in traced.parameters
    assert traced.inputs == ["idx"] and traced.labels == ["labels"]
    session = traced.compile().session()
    for name, p in names.items():
        assert np.array_equal(session.read(name), p.detach().numpy()), name
    text = traced.ir(locations=True)
    assert "nanogpt.py" in text  # ops carry the module's source lines


def steps_like_pytorch(traced, model, inputs, labels, loss, precision,
                       tolerance, steps=8, lr=1e-2):
    """`traced` (model imported with `loss`) trained `steps` AdamW steps on
    one batch beside PyTorch's own training of a copy of `model` in the
    precision's dtype: each loss within `tolerance` (relative)."""
    session = traced.compile(optimizer=zcc.adamw(lr=lr)).session(
        precision=precision)
    dtype = torch.float64 if precision == "f64" else torch.float32
    reference = copy.deepcopy(model).to(dtype)
    optimizer = torch.optim.AdamW(reference.parameters(), lr=lr)
    cast = [t.to(dtype) if t.is_floating_point() else t for t in inputs + labels]
    for step in range(steps):
        ours = session.step(*(t.numpy() for t in inputs + labels))
        optimizer.zero_grad()
        theirs = loss(reference(*cast[:len(inputs)]), *cast[len(inputs):])
        theirs.backward()
        optimizer.step()
        assert abs(ours - theirs.item()) <= tolerance * abs(theirs.item()), step


def trains_like_pytorch(model, width, classes, precision, tolerance, ops,
                        seed=0, rows=16, batches=None, steps=20, run=None):
    """Imports `model` (input [rows, width] -> logits over `classes`, or
    the given (input, label) `batches`) with cross-entropy, checks its IR
    uses each zt op of `ops`, and trains it `steps` AdamW steps beside
    PyTorch's own training of a copy: the losses agree within `tolerance`
    (relative) in `precision`. `run`, a dict, receives the traced step, the
    session and PyTorch's trained copy."""
    rng = np.random.default_rng(seed)
    batches = batches or [(rng.normal(size=(rows, width)).astype(np.float32),
                           rng.integers(0, classes, size=rows))
                          for _ in range(3)]
    x0, y0 = (torch.from_numpy(a) for a in batches[0])
    traced = zcc.from_torch(copy.deepcopy(model), (x0,), (y0,),
                            loss=F.cross_entropy)
    ir = traced.ir()
    for op in ops:
        assert f"zt.{op} " in ir, op
    session = traced.compile(optimizer=zcc.adamw(lr=1e-2)).session(
        precision=precision)
    dtype = torch.float64 if precision == "f64" else torch.float32
    reference = copy.deepcopy(model).to(dtype)
    optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    if run is not None:
        run.update(traced=traced, session=session, reference=reference)
    for step in range(steps):
        x, y = batches[step % len(batches)]
        ours = session.step(x, y)
        optimizer.zero_grad()
        x = torch.from_numpy(x)
        loss = F.cross_entropy(reference(x.to(dtype) if x.is_floating_point()
                                         else x), torch.from_numpy(y))
        loss.backward()
        optimizer.step()
        assert abs(ours - loss.item()) <= tolerance * abs(loss.item()), step
    return ir


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(20, 32), nn.GELU(), nn.Linear(32, 32),
                                 nn.ReLU(), nn.Linear(32, 5))

    def forward(self, x):
        return self.net(x)


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_mlp_with_erf_gelu_and_relu(precision, tolerance):
    torch.manual_seed(2)
    trains_like_pytorch(Mlp(), 20, 5, precision, tolerance,
                        ("gelu_erf", "relu"))


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.bn = nn.BatchNorm1d(8)
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        h = self.fc(x)
        h = h + torch.cumprod(h, dim=1)  # CUMPROD-LINE
        h = torch.flip(h, [1])
        return self.out(self.bn(h))


def test_unsupported_ops_are_reported_together():
    model = Unsupported()
    x, y = torch.randn(4, 8), torch.randint(0, 3, (4,))
    with pytest.raises(zcc.Error) as info:
        zcc.from_torch(model, (x,), (y,), loss=F.cross_entropy)
    message = str(info.value)
    cumprod_line = next(i for i, text in enumerate(open(__file__), 1)
                        if "# CUMPROD-LINE" in text and "next(" not in text)
    assert f"aten.cumprod.default (no zcc mapping): 1 use, first at {__file__}:{cumprod_line}" \
        in message, message
    assert "aten.flip.default" in message
    # BatchNorm's running statistics are state the step writes: no problem.
    assert "'bn'" not in message, message


class WritesInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        x.mul_(0.5)
        return self.fc(x)


def test_a_step_that_writes_an_input_is_refused():
    with pytest.raises(zcc.Error, match=r"aten.mul_.Tensor \(in place on an "
                       r"input or parameter\): 1 use"):
        zcc.from_torch(WritesInput(), (torch.randn(3, 4),),
                       (torch.randn(3, 4),), loss=F.mse_loss)


def test_given_weights_are_needed(tmp_path):
    torch.manual_seed(3)
    model = Mlp()
    x, y = torch.randn(16, 20), torch.randint(0, 5, (16,))
    compiled = zcc.from_torch(model, (x,), (y,), loss=F.cross_entropy).compile()
    path = tmp_path / "mlp.zplan"
    compiled.save(path)
    plan = zcc.load_plan(path)  # a plan alone: the weights are not in it
    session = plan.session()
    with pytest.raises(zcc.Error, match=r"initialized 'given' .* nothing ran"):
        session.step(x.numpy(), y.numpy())
    # With a checkpoint of the imported weights it runs, and matches.
    weights = tmp_path / "weights.safetensors"
    compiled.session().save(weights)
    session.load(weights)
    assert session.step(x.numpy(), y.numpy()) == \
        compiled.session().step(x.numpy(), y.numpy())


def test_4_layer_width_256_gpt_matches_pytorch_f64():
    # Issue 16's configuration, with the arena's in-place results: the same
    # losses as PyTorch's own f64 training, step for step.
    torch.manual_seed(0)
    model = nanogpt.GPT(vocab=512, sequence=128, width=256, heads=4, layers=4)
    data = nanogpt.batches(4, batch=8, sequence=128, vocab=512)
    ours, theirs, _, _ = nanogpt.train_both(model, data, 20, precision="f64")
    relative = np.abs(np.array(ours) - theirs) / np.abs(theirs)
    assert relative.max() < 1e-6, list(zip(ours, theirs))
    assert theirs[-1] < 0.5 * theirs[0]


class ClassicAttention(nn.Module):
    """Attention as the first nanoGPT wrote it: a registered tril buffer,
    masked_fill with -inf, softmax; buffers and ops on them fold at import."""

    def __init__(self, width=16, heads=2, sequence=8):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.register_buffer("bias", torch.tril(torch.ones(sequence, sequence))
                             .view(1, 1, sequence, sequence))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.heads, -1).transpose(1, 2)
        k = k.view(B, T, self.heads, -1).transpose(1, 2)
        v = v.view(B, T, self.heads, -1).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (C // self.heads) ** 0.5)
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


def test_masked_fill_with_a_buffer_mask_trains_like_pytorch():
    torch.manual_seed(4)
    model = ClassicAttention().double()
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    target = torch.randn(2, 6, 16, dtype=torch.float64)
    traced = zcc.from_torch(copy.deepcopy(model), (x,), (target,), loss=F.mse_loss)
    text = traced.ir()
    assert "zt.constant" in text and "bias" not in traced.parameters
    session = traced.compile(optimizer=zcc.adamw(lr=1e-2)).session(precision="f64")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(10):
        ours = session.step(x.float().numpy(), target.float().numpy())
        optimizer.zero_grad()
        loss = F.mse_loss(model(x.float().double()), target.float().double())
        loss.backward()
        optimizer.step()
        assert abs(ours - loss.item()) <= 1e-9 * abs(loss.item()), step


def test_masked_fill_with_a_data_mask_is_where():
    class DataMask(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x):
            h = self.fc(x)
            return h.masked_fill(h > 0, -1.5).sum(-1)

    torch.manual_seed(7)
    model = DataMask()
    x, y = torch.randn(4, 3), torch.randn(4)
    traced = zcc.from_torch(copy.deepcopy(model), (x,), (y,), loss=F.mse_loss)
    assert "zt.where" in traced.ir() and "zt.gt" in traced.ir()
    session = traced.compile(optimizer=zcc.sgd(lr=0.1)).session(precision="f64")
    reference = copy.deepcopy(model).double()
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(5):
        ours = session.step(x.numpy(), y.numpy())
        optimizer.zero_grad()
        loss = F.mse_loss(reference(x.double()), y.double())
        loss.backward()
        optimizer.step()
        assert abs(ours - loss.item()) <= 1e-12 * abs(loss.item()), step


@pytest.mark.parametrize("name", ["sgd", "adamw"])
def test_maximize_steps_as_torch_optim_maximize(name):
    # A compile option by its name (OptionList.h's row), against PyTorch's
    # optimizer with maximize=True: the same losses step by step, in f64.
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 1))
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    traced = zcc.from_torch(copy.deepcopy(model), (x,), (y,), loss=F.mse_loss)
    reference = copy.deepcopy(model).double()
    if name == "sgd":
        ours = zcc.sgd(lr=0.05, momentum=0.9, weight_decay=0.01)
        theirs = torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9,
                                 weight_decay=0.01, maximize=True)
    else:
        ours = zcc.adamw(lr=1e-2, weight_decay=0.1)
        theirs = torch.optim.AdamW(reference.parameters(), lr=1e-2,
                                   weight_decay=0.1, maximize=True)
    session = traced.compile(optimizer=ours, maximize=True).session(
        precision="f64")
    losses = []
    for step in range(6):
        loss_ours = session.step(x.numpy(), y.numpy())
        theirs.zero_grad()
        loss = F.mse_loss(reference(x.double()), y.double())
        loss.backward()
        theirs.step()
        assert abs(loss_ours - loss.item()) <= 1e-9 * abs(loss.item()), step
        losses.append(loss_ours)
    assert losses[-1] > losses[0]  # it climbed


class CrossAttention(nn.Module):
    """SDPA with different query and key lengths, causal or not."""

    def __init__(self, causal, width=12, heads=3):
        super().__init__()
        self.causal, self.heads = causal, heads
        self.q = nn.Linear(width, width)
        self.kv = nn.Linear(width, 2 * width)

    def forward(self, x, memory):
        B, S, C = x.shape
        T = memory.shape[1]
        q = self.q(x).view(B, S, self.heads, -1).transpose(1, 2)
        k, v = self.kv(memory).split(C, dim=2)
        k = k.view(B, T, self.heads, -1).transpose(1, 2)
        v = v.view(B, T, self.heads, -1).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal,
                                           scale=0.3 if self.causal else None)
        return y.transpose(1, 2).reshape(B, S, C)


@pytest.mark.parametrize("causal,queries,keys", [(True, 70, 9), (True, 5, 11),
                                                 (False, 7, 66)])
def test_sdpa_imports_as_fused_attention_and_trains_like_pytorch(causal, queries,
                                                                 keys):
    torch.manual_seed(5)
    model = CrossAttention(causal).double()
    x = torch.randn(2, queries, 12, dtype=torch.float64)
    memory = torch.randn(2, keys, 12, dtype=torch.float64)
    target = torch.randn(2, queries, 12, dtype=torch.float64)
    traced = zcc.from_torch(copy.deepcopy(model), (x, memory), (target,),
                            loss=F.mse_loss)
    text = traced.ir()
    assert "zt.attention" in text and "zt.softmax" not in text
    session = traced.compile(optimizer=zcc.adamw(lr=1e-2)).session(precision="f64")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(8):
        ours = session.step(x.float().numpy(), memory.float().numpy(),
                            target.float().numpy())
        optimizer.zero_grad()
        loss = F.mse_loss(model(x.float().double(), memory.float().double()),
                          target.float().double())
        loss.backward()
        optimizer.step()
        assert abs(ours - loss.item()) <= 1e-9 * abs(loss.item()), step


class GroupedQueryAttention(nn.Module):
    """Causal self-attention with 6 query heads on 2 key and value heads:
    through SDPA's enable_gqa, or repeated as transformers' repeat_kv does
    (unsqueeze, expand, reshape), or (a model zcc must not group) keys
    repeated head by head with repeat_interleave's opposite order."""

    def __init__(self, how, width=24, heads=6, kv_heads=2):
        super().__init__()
        self.how, self.heads, self.kv_heads = how, heads, kv_heads
        self.head = width // heads
        self.q = nn.Linear(width, width)
        self.kv = nn.Linear(width, 2 * kv_heads * self.head)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        B, S, C = x.shape
        q = self.q(x).view(B, S, self.heads, -1).transpose(1, 2)
        k, v = (t.view(B, S, self.kv_heads, -1).transpose(1, 2)
                for t in self.kv(x).split(self.kv_heads * self.head, dim=2))
        groups = self.heads // self.kv_heads
        if self.how == "repeat_kv":
            k, v = (t[:, :, None].expand(B, self.kv_heads, groups, S, self.head)
                    .reshape(B, self.heads, S, self.head) for t in (k, v))
        elif self.how == "tiled":  # head h reads h % kv_heads: not grouped
            k, v = (t.repeat(1, groups, 1, 1) for t in (k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           enable_gqa=self.how == "enable_gqa")
        return self.out(y.transpose(1, 2).reshape(B, S, C))


@pytest.mark.parametrize("how", ["enable_gqa", "repeat_kv", "tiled"])
@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-5)])
def test_grouped_query_attention_reads_shared_heads_and_trains_like_pytorch(
        how, precision, tolerance):
    # Grouped-query attention as models write it: zt.attention reads the 2
    # key and value heads (no repeated copy in the IR), and trains to
    # PyTorch's losses; tiled heads are a different function, kept as such.
    torch.manual_seed(7)
    model = GroupedQueryAttention(how)
    x = torch.randn(2, 70, 24)
    target = torch.randn(2, 70, 24)
    traced = zcc.from_torch(copy.deepcopy(model), (x,), (target,),
                            loss=F.mse_loss)
    ir = traced.ir()
    # One attention in each entry (training, eval, predict).
    attention = [line for line in ir.splitlines() if "zt.attention" in line]
    assert len(attention) == 3, ir
    grouped = "tensor<2x6x70x4xf32>, tensor<2x2x70x4xf32>, tensor<2x2x70x4xf32>"
    assert all((grouped in line) == (how != "tiled") for line in attention), ir
    steps_like_pytorch(traced, model, (x,), (target,), F.mse_loss, precision,
                       tolerance)


def test_grouped_query_attention_keeps_no_repeated_keys():
    # The repeat_kv form of a long sequence: the arena holds no [B, H, T, D]
    # copy of the keys and values, so it is smaller than the tiled form's,
    # which keeps its copies (H heads where the grouped form keeps Hkv) for
    # the backward, by at least their bytes.
    torch.manual_seed(7)
    arenas = {}
    heads, kv_heads, length, head = 12, 2, 512, 8
    for how in ("repeat_kv", "tiled"):
        model = GroupedQueryAttention(how, width=heads * head, heads=heads,
                                      kv_heads=kv_heads)
        x = torch.randn(1, length, heads * head)
        traced = zcc.from_torch(model, (x,), (x,), loss=F.mse_loss)
        arenas[how] = traced.compile().memory_analysis()["arena"]
    copies = 2 * (heads - kv_heads) * length * head * 4
    assert arenas["tiled"] - arenas["repeat_kv"] >= copies, arenas


def test_fused_attention_saves_less_than_the_written_out_form():
    # The same GPT imported with SDPA (zt.attention) and with the attention
    # written out (masked_fill, softmax): the fused plan's arena is smaller,
    # and both train to PyTorch's losses (test_gpt_trains_like_pytorch and
    # the masked_fill test above).
    arenas = {}
    for fused in (True, False):
        torch.manual_seed(0)
        # Long sequences, narrow heads: the probabilities dominate.
        model = nanogpt.GPT(vocab=128, sequence=256, width=32, heads=4, layers=2,
                            fused_attention=fused)
        x, y = (torch.from_numpy(a) for a in nanogpt.batches(1, 4, 256, 128)[0])
        traced = zcc.from_torch(model, (x,), (y,), loss=nanogpt.lm_loss)
        assert ("zt.attention" in traced.ir()) == fused
        arenas[fused] = traced.compile().memory_analysis()["arena"]
    assert arenas[True] < 0.5 * arenas[False], arenas


def test_recompute_gives_the_same_bits_in_less_memory():
    # zt-autodiff recomputes GELU and layer_norm outputs (and views, dropout)
    # in the backward instead of keeping them: the same kernels on the same
    # operands, so the same bits, dropout on; only the arena shrinks.
    torch.manual_seed(2)
    model = nanogpt.GPT(vocab=128, sequence=32, width=64, heads=4, layers=2,
                        dropout=0.1)
    data = nanogpt.batches(3, batch=4, sequence=32, vocab=128)
    x, y = (torch.from_numpy(a) for a in data[0])
    traced = zcc.from_torch(model, (x,), (y,), loss=nanogpt.lm_loss)
    runs, arenas = {}, {}
    for recompute in (True, False):
        compiled = traced.compile(optimizer=zcc.adamw(lr=1e-3), recompute=recompute)
        arenas[recompute] = compiled.memory_analysis()["arena"]
        session = compiled.session()
        losses = [session.step(*data[s % 3]) for s in range(6)]
        runs[recompute] = (losses, {n: v.tobytes()
                                    for n, v in session.state_dict().items()})
    assert runs[True] == runs[False]
    assert runs[True][0][-1] < runs[True][0][0]
    assert arenas[True] < 0.9 * arenas[False], arenas


def test_a_memory_budget_gives_the_same_bits_in_less_memory():
    # zt-remat recomputes matmuls, attention and whole residual chains in the
    # backward until the arena fits the budget: the same kernels on the same
    # operands, dropout's masks included, so training is bit-identical.
    torch.manual_seed(0)
    model = nanogpt.GPT(dropout=0.1)  # the GPT example
    data = nanogpt.batches(3, batch=4, sequence=16, vocab=128)
    x, y = (torch.from_numpy(a) for a in data[0])
    traced = zcc.from_torch(model, (x,), (y,), loss=nanogpt.lm_loss)
    free = traced.compile(optimizer=zcc.adamw(lr=1e-3))
    arena = free.memory_analysis()["arena"]
    budget = int(0.75 * arena)
    tight = traced.compile(optimizer=zcc.adamw(lr=1e-3), memory_budget=budget)
    assert tight.memory_analysis()["arena"] <= budget
    assert "recomputed" in tight.report() and "matmul" in tight.report()
    phases = {l["phase"] for l in tight.memory_timeline()["entries"][0]["launches"]}
    assert "recompute" in phases
    # Poison mode fills every dead buffer with NaNs: a copy reading a value
    # after its bytes went to another would show.
    runs = []
    for compiled, mode in ((free, "planned"), (tight, "planned"), (tight, "poison")):
        session = compiled.session(mode=mode)
        losses = [session.step(*data[s % 3]) for s in range(6)]
        runs.append((losses, {n: v.tobytes()
                              for n, v in session.state_dict().items()}))
    assert runs[0] == runs[1] == runs[2]
    assert runs[0][0][-1] < runs[0][0][0]
    # Below what recomputation reaches: an error naming the smallest arena.
    with pytest.raises(zcc.Error, match=r"memory budget \d+ bytes is below "
                       r"the smallest arena recomputation reaches: \d+ bytes"):
        traced.compile(optimizer=zcc.adamw(lr=1e-3), memory_budget=arena // 4)


class ElementOps(nn.Module):
    """Every element op the rows map from ATen, between two linear layers."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(12, 16)
        self.b = nn.Linear(16, 16)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        h = self.a(x)
        g = self.b(h)
        parts = [h.abs(), h.clamp(-0.5, 0.8), h.clamp(min=0.1), F.hardtanh(h),
                 F.hardswish(4 * h), F.hardsigmoid(4 * h), torch.erf(h),
                 torch.sin(h), torch.cos(h),
                 F.softplus(h, beta=2.0, threshold=1.0), F.leaky_relu(h, 0.2),
                 F.elu(h, alpha=0.7), torch.reciprocal(h.abs() + 1.0),
                 (h.abs() + 0.5).pow(1.5), h.pow(3), torch.maximum(h, g),
                 torch.minimum(h, g)]
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        return self.out(total)


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_element_rows_import_and_train_like_pytorch(precision, tolerance):
    torch.manual_seed(5)
    trains_like_pytorch(
        ElementOps(), 12, 4, precision, tolerance,
        ("abs", "clamp", "hardswish", "hardsigmoid", "erf", "sin", "cos",
         "softplus", "leaky_relu", "elu", "reciprocal", "pow", "maximum",
         "minimum"), seed=1, rows=8)


class Squares(nn.Module):
    """torch.square between two linear layers (imported as x * x)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(12, 16)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        return self.out(torch.square(self.a(x)))


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_square_imports_and_trains_like_pytorch(precision, tolerance):
    torch.manual_seed(5)
    trains_like_pytorch(Squares(), 12, 4, precision, tolerance, ("mul",),
                        seed=1, rows=8)


class RunningSums(nn.Module):
    """Running sums along the features and along the batch."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(12, 16)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        h = self.a(x)
        return self.out(0.25 * torch.cumsum(h, dim=1) + h.cumsum(-2))


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_cumsum_imports_and_trains_like_pytorch(precision, tolerance):
    torch.manual_seed(6)
    ir = trains_like_pytorch(RunningSums(), 12, 4, precision, tolerance,
                             ("cumsum",), seed=2, rows=8)
    assert "{dim = 1 : i64}" in ir and "{dim = -2 : i64}" in ir, ir


def test_cumsum_to_another_dtype_is_reported():
    class Cast(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, 1, dtype=torch.float16).float()

    with pytest.raises(zcc.Error, match=r"aten.cumsum.default \(dtype\)"):
        zcc.from_torch(Cast(), (torch.randn(4, 3),), (torch.randint(0, 3, (4,)),),
                       loss=F.cross_entropy)


def test_element_row_arguments_outside_the_row_are_reported():
    class Scaled(nn.Module):
        def forward(self, x):
            return torch.ops.aten.elu(x, 1.0, 2.0)  # ELU-LINE

    x, y = torch.randn(4, 3), torch.randint(0, 3, (4,))
    with pytest.raises(zcc.Error) as info:
        zcc.from_torch(Scaled(), (x,), (y,), loss=F.cross_entropy)
    assert "aten.elu.default (scale=2.0 (only 1))" in str(info.value), str(info.value)


class Masked(nn.Module):
    """Masks as transformers builds them: comparisons, logical ops, where
    with a number, masked by a comparison of the data."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(10, 12)
        self.out = nn.Linear(12, 3)

    def forward(self, x):
        h = self.a(x)
        leaky = torch.where(h > 0, h, 0.1 * h)
        band = (h >= -0.5) & (h < 0.5) | (h == 0)
        kept = torch.where(~band, leaky, 0.0)
        floor = torch.where(h <= -1.0, -1.0, h)
        other = torch.where(h != 0, kept, h) + floor
        both = torch.logical_and(h > -2, torch.logical_not(h > 2))
        return self.out(torch.where(both, other, h))


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_masks_and_where_train_like_pytorch(precision, tolerance):
    torch.manual_seed(6)
    ir = trains_like_pytorch(
        Masked(), 10, 3, precision, tolerance,
        ("where", "gt", "ge", "lt", "le", "eq", "ne", "logical_and",
         "logical_or", "logical_not"), seed=2, rows=8)
    assert "xi1>" in ir


class MaskedAttention(nn.Module):
    """SDPA with an attention mask known at import (a buffer)."""

    def __init__(self, mask):
        super().__init__()
        self.qkv = nn.Linear(8, 24)
        self.out = nn.Linear(8, 3)
        self.register_buffer("mask", mask)

    def forward(self, x):
        q, k, v = self.qkv(x.reshape(2, 4, 8)).split(8, dim=-1)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)
        return self.out(y.reshape(8, 8))


@pytest.mark.parametrize("kind", ["bool-causal", "float-causal", "all"])
def test_sdpa_masks_known_at_import_train_like_pytorch(kind):
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    mask = {"bool-causal": causal,
            "float-causal": torch.zeros(4, 4).masked_fill(~causal, float("-inf")),
            "all": torch.ones(1, 4, 4, dtype=torch.bool)}[kind]
    torch.manual_seed(7)
    ir = trains_like_pytorch(MaskedAttention(mask), 8, 3, "f64", 1e-9,
                             ("attention",), rows=8)
    assert ("causal" in ir) == (kind != "all"), ir


def test_sdpa_masks_neither_causal_nor_empty_are_refused():
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[0, 3] = False
    model = MaskedAttention(mask)
    with pytest.raises(zcc.Error, match=r"attn_mask, known at import, is "
                       r"neither causal nor all allowed"):
        zcc.from_torch(model, (torch.randn(8, 8),), (torch.randint(0, 3, (8,)),),
                       loss=F.cross_entropy)


class PaddedAttention(nn.Module):
    """Causal SDPA over a padded batch as transformers masks it: the
    `attention_mask` input cast to bool, read at constant positions
    (index.Tensor with aranges), and-ed with a causal mask known at import."""

    def __init__(self, gather=False):
        super().__init__()
        self.qkv = nn.Linear(8, 24)
        self.out = nn.Linear(8, 5)
        self.gather = gather

    def forward(self, x, attention_mask):
        batch, length = attention_mask.shape
        q, k, v = (t.unflatten(-1, (2, 4)).transpose(1, 2)
                   for t in self.qkv(x).split(8, dim=-1))
        keys = torch.arange(length)
        if self.gather:  # positions that are not a run: a real gather
            keys = keys.flip(0)
        pad = attention_mask.to(torch.bool)[
            torch.arange(batch)[:, None, None, None], keys[None, None, None, :]]
        causal = torch.ones(length, length, dtype=torch.bool).tril()
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=causal & pad)
        return self.out(y.transpose(1, 2).flatten(2)).flatten(0, 1)


@pytest.mark.parametrize("precision, tolerance", [("f64", 1e-9), ("f32", 1e-5)])
def test_padded_batches_train_like_pytorch(precision, tolerance):
    # Masks from data: the fused attention reads the [B, 1, 1, T] padding
    # mask with the causal flag; cross-entropy leaves out the -100 labels.
    # The second sequence is padded on the left: its first queries see no
    # key, and give 0 as PyTorch's do.
    torch.manual_seed(3)
    model = PaddedAttention()
    x = torch.randn(2, 6, 8)
    mask = torch.tensor([[1, 1, 1, 1, 0, 0], [0, 0, 1, 1, 1, 1]])
    labels = torch.randint(0, 5, (2, 6))
    labels[mask == 0] = -100
    labels = labels.flatten()
    traced = zcc.from_torch(copy.deepcopy(model), (x, mask), (labels,),
                            loss=F.cross_entropy)
    ir = traced.ir()
    assert "mask %" in ir and "causal" in ir and "2x1x1x6xi1" in ir, ir
    assert "ignore_index = -100" in ir
    steps_like_pytorch(traced, model, (x, mask), (labels,), F.cross_entropy,
                       precision, tolerance, steps=10)


def test_gathers_by_constant_positions_are_refused_clearly():
    model = PaddedAttention(gather=True)
    with pytest.raises(zcc.Error, match=r"index.Tensor with constant indices "
                       r"that are not runs of positions, into a bool or "
                       r"integer tensor"):
        zcc.from_torch(model, (torch.randn(2, 6, 8), torch.ones(2, 6, dtype=torch.int64)),
                       (torch.zeros(12, dtype=torch.int64),), loss=F.cross_entropy)


class Patches(nn.Module):
    """A patch embedding (ViT's conv2d, stride = kernel) and a classifier."""

    def __init__(self, padding=0):
        super().__init__()
        self.embed = nn.Conv2d(3, 6, kernel_size=2, stride=2, padding=padding)
        self.out = nn.Linear(6 * 4, 4)

    def forward(self, x):
        h = self.embed(x.reshape(-1, 3, 4, 4))
        # An empty part, as a key-value cache's first state: cat skips it.
        return self.out(torch.cat([torch.zeros(0, 24), h.flatten(1)]))


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_patch_convolutions_train_like_pytorch(precision, tolerance):
    torch.manual_seed(8)
    trains_like_pytorch(Patches(), 48, 4, precision, tolerance, ("matmul",),
                        rows=8)


class Convolutions(nn.Module):
    """Padded, strided, dilated, grouped and depthwise 2-D convolutions, a
    1-D one with padding='same', with and without bias."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, kernel_size=3, stride=2, padding=1)
        self.b = nn.Conv2d(8, 8, kernel_size=3, padding=2, dilation=2,
                           groups=2, bias=False)
        self.c = nn.Conv2d(8, 8, kernel_size=3, padding=1, groups=8)
        self.d = nn.Conv1d(8, 4, kernel_size=3, padding="same")
        self.out = nn.Linear(4 * 9, 4)

    def forward(self, x):
        h = torch.tanh(self.a(x.reshape(-1, 3, 6, 6)))  # [N, 8, 3, 3]
        h = torch.tanh(self.c(torch.tanh(self.b(h))))
        h = self.d(h.flatten(2))                          # [N, 4, 9]
        return self.out(h.flatten(1))


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_convolutions_train_like_pytorch(precision, tolerance):
    torch.manual_seed(9)
    trains_like_pytorch(Convolutions(), 108, 4, precision, tolerance,
                        ("conv2d",), rows=8)


class Pooling(nn.Module):
    """ResNet's stem and block shapes at a tiny size: in-place ReLU and
    hardswish, max pooling (3x3, stride 2, padded; a dilated window;
    SqueezeNet's ceil_mode, its last windows hanging over the end), an
    in-place residual add, adaptive average pooling to 2x2 and to 1x1,
    average pooling (DenseNet's 2x2 windows side by side; overlapping
    padded windows, the padding counted)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, kernel_size=3, padding=1)
        self.relu = nn.ReLU(inplace=True)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.conv = nn.Conv2d(4, 4, kernel_size=3, padding=1)
        self.act = nn.Hardswish(inplace=True)
        self.out = nn.Linear(4 * 4 + 4 + 4 * 4 + 4 * 4 + 4 * 16, 4)

    def forward(self, x):
        h = self.pool(self.relu(self.stem(x.reshape(-1, 3, 8, 8))))  # 4x4
        y = self.act(self.conv(h))
        y += h
        wide = F.max_pool2d(y, 2, stride=1, padding=(1, 0), dilation=(1, 2))
        ceil = F.max_pool2d(y, 3, stride=2, ceil_mode=True)  # 2x2, not 1x1
        return self.out(torch.cat([F.adaptive_avg_pool2d(y, 2).flatten(1),
                                   F.adaptive_avg_pool2d(wide, 1).flatten(1),
                                   ceil.flatten(1),
                                   F.avg_pool2d(y, 2).flatten(1),
                                   F.avg_pool2d(y, 3, 1, 1).flatten(1)], 1))


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_pooling_and_in_place_ops_train_like_pytorch(precision, tolerance):
    torch.manual_seed(10)
    ir = trains_like_pytorch(Pooling(), 192, 4, precision, tolerance,
                             ("conv2d", "max_pool2d"), rows=8)
    assert "ceil_mode" in ir


def test_in_place_ops_on_tensors_read_later_are_reported():
    class Aliased(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            h = self.fc(x)
            v = h.view(12)
            h.relu_()  # v is h: it reads the ReLU's result
            return (v * 3).view(3, 4)

    with pytest.raises(zcc.Error, match=r"aten.relu_.default \(in place on "
                       r"a tensor read afterwards \(through a view\)\)"):
        zcc.from_torch(Aliased(), (torch.randn(3, 4),), (torch.randn(3, 4),),
                       loss=F.mse_loss)


class Norms(nn.Module):
    """BatchNorm without running statistics (the batch's own), GroupNorm,
    and a BatchNorm in eval mode (frozen: its running statistics are
    constants)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, kernel_size=3, padding=1)
        self.batch = nn.BatchNorm2d(4, track_running_stats=False)
        self.group = nn.GroupNorm(2, 4)
        self.frozen = nn.BatchNorm2d(4)
        self.frozen.running_mean.uniform_(-1, 1)
        self.frozen.running_var.uniform_(0.5, 2)
        self.frozen.eval()
        self.out = nn.Linear(4 * 16, 4)

    def forward(self, x):
        h = torch.tanh(self.batch(self.conv(x.reshape(-1, 3, 4, 4))))
        return self.out(self.frozen(self.group(h)).flatten(1))


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_batch_statistics_group_norm_and_frozen_batch_norm_train_like_pytorch(
        precision, tolerance):
    torch.manual_seed(11)
    trains_like_pytorch(Norms(), 48, 4, precision, tolerance, ("rsqrt",),
                        rows=8)


class Running(nn.Module):
    """BatchNorms that update their running statistics (momentum 0.1 and
    0.3) after a convolution and a linear layer. Neither has a bias, as in
    ResNet: a bias before a BatchNorm has a gradient of exactly 0, which
    AdamW turns into steps of +-lr from rounding noise, and the running
    mean would follow that noise."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, kernel_size=3, padding=1, bias=False)
        self.bn2d = nn.BatchNorm2d(4)
        self.bn2d.running_var.uniform_(0.5, 2)  # not the defaults
        self.bn1d = nn.BatchNorm1d(6, momentum=0.3)
        self.fc = nn.Linear(4 * 16, 6, bias=False)
        self.out = nn.Linear(6, 3)

    def forward(self, x):
        h = torch.relu(self.bn2d(self.conv(x)))
        return self.out(torch.tanh(self.bn1d(self.fc(h.flatten(1)))))


BN_STATE = [f"{bn}.{name}" for bn in ("bn2d", "bn1d") for name in
            ("running_mean", "running_var", "num_batches_tracked")]


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_batch_norm_running_statistics_train_like_pytorch(precision, tolerance,
                                                          tmp_path):
    """The running statistics are state the step writes in place: after 10
    AdamW steps the losses and every BatchNorm buffer equal PyTorch's, and
    a checkpoint carries them."""
    torch.manual_seed(14)
    model = Running()
    rng = np.random.default_rng(4)
    batches = [(rng.normal(size=(8, 3, 4, 4)).astype(np.float32),
                rng.integers(0, 3, size=8)) for _ in range(3)]
    run = {}
    trains_like_pytorch(model, None, 3, precision, tolerance, ("conv2d",),
                        batches=batches, steps=10, run=run)
    traced, session = run["traced"], run["session"]
    assert sorted(traced.state) == sorted(BN_STATE)
    buffers = dict(run["reference"].named_buffers())
    for name in BN_STATE:
        theirs = buffers[name].double().numpy()
        ours = session.read(name)
        difference = np.linalg.norm(ours - theirs)
        assert difference <= tolerance * np.linalg.norm(theirs), name
    assert session.read("bn1d.num_batches_tracked") == 10
    # A checkpoint (f32) holds the state; a fresh session resumes from it.
    session.save(tmp_path / "step10.safetensors")
    resumed = traced.compile(optimizer=zcc.adamw(lr=1e-2)).session(
        precision=precision)
    resumed.load(tmp_path / "step10.safetensors")
    for name in BN_STATE:
        assert np.array_equal(resumed.read(name),
                              session.read(name).astype(np.float32)), name
    assert set(BN_STATE) <= set(session.state_dict())


def test_every_microbatch_updates_the_running_statistics():
    """With accumulation each microbatch's forward updates them, as each
    forward does in PyTorch; the apply entry leaves them alone."""
    torch.manual_seed(15)
    model = Running()
    x = torch.randn(2, 8, 3, 4, 4)
    y = torch.randint(0, 3, (2, 8))
    traced = zcc.from_torch(copy.deepcopy(model), (x[0],), (y[0],),
                            loss=F.cross_entropy)
    session = traced.compile(optimizer=zcc.sgd(lr=0.1), accumulate=True).session(
        precision="f64", microbatches=2)
    session.step(x.numpy(), y.numpy())
    reference = copy.deepcopy(model).double()
    for i in range(2):  # the weights of the first microbatches: unchanged
        reference(x[i].double())
    for name, theirs in reference.named_buffers():
        assert np.allclose(session.read(name), theirs.double().numpy(),
                           rtol=1e-9, atol=0), name


def losses_match(model, x, y, loss, steps=10, tolerance=1e-9):
    """zcc's f64 losses of `model` under `loss` against PyTorch's, AdamW."""
    traced = zcc.from_torch(copy.deepcopy(model), (x,), (y,), loss=loss)
    session = traced.compile(optimizer=zcc.adamw(lr=1e-2)).session(
        precision="f64")
    reference = copy.deepcopy(model).double()
    optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    for step in range(steps):
        ours = session.step(x.numpy(), y.numpy())
        optimizer.zero_grad()
        theirs = loss(reference(x.double()),
                      y.double() if y.is_floating_point() else y)
        theirs.backward()
        optimizer.step()
        assert abs(ours - theirs.item()) <= tolerance * abs(theirs.item()), step
    return traced.ir()


def test_label_smoothing_trains_like_pytorch():
    torch.manual_seed(13)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 5))
    x = torch.randn(10, 6)
    labels = torch.randint(0, 5, (10,))
    labels[2] = -100
    ir = losses_match(model, x, labels, lambda z, y: F.cross_entropy(
        z, y, label_smoothing=0.15))
    assert "label_smoothing = 1.500000e-01" in ir, ir


def test_bce_with_logits_and_nll_of_log_softmax_train_like_pytorch():
    torch.manual_seed(12)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    nn.init.zeros_(model[2].weight)  # logits exactly 0 at the first step
    x = torch.randn(10, 6)
    targets = torch.rand(10, 3)
    losses_match(model, x, targets, F.binary_cross_entropy_with_logits)
    labels = torch.randint(0, 3, (10,))
    labels[3] = -100
    ir = losses_match(model, x, labels,
                      lambda z, y: F.nll_loss(F.log_softmax(z, -1), y))
    assert "ignore_index = -100" in ir


def test_uneven_same_padding_and_dtype_changes_are_reported():
    class Cast(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Conv2d(3, 6, kernel_size=2, padding="same")
            self.out = nn.Linear(6 * 16, 4)

        def forward(self, x):
            h = self.embed(x.reshape(-1, 3, 4, 4)).flatten(1)
            return self.out(h.to(torch.float64).float())

    with pytest.raises(zcc.Error) as info:
        zcc.from_torch(Cast(), (torch.randn(8, 48),), (torch.randint(0, 4, (8,)),),
                       loss=F.cross_entropy)
    message = str(info.value)
    assert "aten.conv2d.padding (padding='same' that is not symmetric" in message
    assert "converts float32 to float64" in message, message


class Detached(nn.Module):
    """detach stops the gradient (was mapped to the tensor itself, which
    trained the first layer through both paths); an embedding's padding row
    gets no gradient from the lookup, though a tied output layer's."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(6, 8, padding_idx=2)
        self.a = nn.Linear(8, 8)
        self.out = nn.Linear(8, 6, bias=False)
        self.out.weight = self.embed.weight  # tied

    def forward(self, ids):
        h = self.a(self.embed(ids))
        return self.out(torch.tanh(h) + 0.5 * h.detach())


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_detach_and_padding_rows_train_like_pytorch(precision, tolerance):
    torch.manual_seed(9)
    ids = np.array([0, 2, 5, 2, 1, 3, 2, 4])
    labels = np.array([1, 0, 3, 2, 5, 4, 0, 1])
    trains_like_pytorch(Detached(), 8, 6, precision, tolerance,
                        ("stop_gradient",), batches=[(ids, labels)])


class StochasticDepth(nn.Module):
    """torchvision's stochastic depth on rows: each row of a residual branch
    kept with probability 0.8 (bernoulli_ into torch.empty), scaled by
    1 / 0.8."""

    def __init__(self):
        super().__init__()
        import torchvision
        self.scale = nn.Parameter(torch.ones(1))
        self.drop = torchvision.ops.StochasticDepth(0.2, "row")

    def forward(self, x):
        return self.drop(x * self.scale)


def test_stochastic_depth_draws_bernoulli_rows():
    # Each step draws each of 1000 rows anew: kept (exactly 1 / 0.8) with
    # probability 0.8, else 0, so the loss mean(y^2) is k / (1000 * 0.8^2)
    # for the k rows kept, and k over 20 steps averages 800 (within 4
    # standard deviations); eval mode is the identity.
    model = StochasticDepth()
    x = torch.ones(1000, 4)
    traced = zcc.from_torch(model, (x,), (torch.zeros(1000, 4),),
                            loss=F.mse_loss)
    assert "zt.dropout" in traced.ir()
    session = traced.compile(optimizer=zcc.sgd(lr=0.0)).session(precision="f64")
    kept = []
    for _ in range(20):
        k = session.step(x.numpy(), np.zeros((1000, 4), np.float32)) * 1000 * 0.64
        assert abs(k - round(k)) < 1e-9, k
        kept.append(round(k))
    assert len(set(kept)) > 1, kept  # a fresh draw each step
    sigma = math.sqrt(1000 * 0.8 * 0.2 / 20)
    assert abs(np.mean(kept) - 800) < 4 * sigma, kept
    assert session.eval(x.numpy(), np.zeros((1000, 4), np.float32)) == 1.0


class Gathers(nn.Module):
    """Gathers of float tensors along one dimension: a relative position
    bias (a parameter table read at constant, repeated positions, as Swin's
    and T5's), index_select with positions from data, and x[:, idx] with
    positions from data (repeats included)."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)
        self.table = nn.Parameter(torch.randn(9, 2))
        offsets = torch.arange(5)[:, None] - torch.arange(5)[None, :] + 4
        self.register_buffer("relative", offsets.flatten(), persistent=False)

    def forward(self, x, rows, cols):
        h = self.proj(x)                                   # [B, 5, 6]
        bias = self.table[self.relative].view(5, 5, 2)     # constant positions
        mixed = (h[..., :2][:, :, None] * bias).sum(1)       # [B, 5, 2]
        h = h + mixed.repeat(1, 1, 3)
        picked = torch.index_select(h, 1, rows)            # [B, R, 6]
        return picked[:, :, cols].flatten(0, 1)            # [B R, C]


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-5)])
def test_gathers_along_one_dimension_train_like_pytorch(precision, tolerance):
    # Rows and columns chosen by data (repeated positions add their
    # gradients), and a table read at constant positions: zt.embedding and
    # its gradient, trained to PyTorch's losses.
    torch.manual_seed(4)
    model = Gathers()
    x = torch.randn(3, 5, 6)
    rows = torch.tensor([4, 0, 0, 2])
    cols = torch.tensor([5, 1, 1, 3, 0])
    labels = torch.randint(0, 5, (12,))
    traced = zcc.from_torch(copy.deepcopy(model), (x, rows, cols), (labels,),
                            loss=F.cross_entropy)
    assert traced.ir().count("zt.embedding ") >= 3
    steps_like_pytorch(traced, model, (x, rows, cols), (labels,),
                       F.cross_entropy, precision, tolerance)


def test_gather_positions_out_of_range_are_errors():
    # From data: the step fails naming the launch, and nothing is written;
    # constant positions out of range fail at import.
    torch.manual_seed(4)
    model = Gathers()
    x = torch.randn(3, 5, 6)
    rows, cols = torch.tensor([4, 0, 0, 2]), torch.tensor([5, 1, 1, 3, 0])
    labels = torch.randint(0, 5, (12,))
    session = zcc.from_torch(model, (x, rows, cols), (labels,),
                             loss=F.cross_entropy).compile().session()
    before = {n: a.tobytes() for n, a in session.state_dict().items()}
    with pytest.raises(zcc.Error, match=r"embedding.*index 7.*out of range"):
        session.step(x.numpy(), np.array([4, 0, 7, 2]), cols.numpy(),
                     labels.numpy())
    assert {n: a.tobytes() for n, a in session.state_dict().items()} == before

    class Outside(nn.Module):
        def forward(self, x):
            return x[:, torch.tensor([0, 9])]
    with pytest.raises(zcc.Error, match=r"index 0\.\.9 out of range for a "
                       r"dimension of size 6"):
        zcc.from_torch(Outside(), (x.flatten(0, 1),), (x.flatten(0, 1)[:, :2],),
                       loss=F.mse_loss)


class Einsums(nn.Module):
    """einsum as models write it: attention scores and their product with
    values over heads, a bilinear form with a letter summed away, a
    transpose, and a three-operand contraction."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)
        self.bilinear = nn.Parameter(torch.randn(4, 4, 3))
        self.mix = nn.Parameter(torch.randn(3, 2))

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = (z.view(b, t, 2, 4) for z in self.qkv(x).split(8, dim=-1))
        scores = torch.einsum("bthd,bshd->bhts", q, k).softmax(-1)
        y = torch.einsum("bhts,bshd->bthd", scores, v)       # [B, T, 2, 4]
        pairs = torch.einsum("bthd,dek,bthe->btk", y, self.bilinear, y)
        moved = torch.einsum("btk->kbt", pairs)
        out = torch.einsum("kbt,kc->btc", moved, self.mix)
        return (out + torch.einsum("bthd->bt", y)[..., None]).flatten(0, 1)


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-5)])
def test_einsum_imports_as_products_and_trains_like_pytorch(precision,
                                                             tolerance):
    torch.manual_seed(6)
    model = Einsums()
    x = torch.randn(3, 5, 8)
    labels = torch.randint(0, 2, (15,))
    traced = zcc.from_torch(copy.deepcopy(model), (x,), (labels,),
                            loss=F.cross_entropy)
    assert "zt.matmul" in traced.ir()
    steps_like_pytorch(traced, model, (x,), (labels,), F.cross_entropy,
                       precision, tolerance)


def test_einsum_forms_zcc_lacks_are_reported():
    class Diagonal(nn.Module):
        def forward(self, x):
            return torch.einsum("bii->bi", x)
    x = torch.randn(2, 3, 3)
    with pytest.raises(zcc.Error, match=r"aten\.einsum\.default \(a letter "
                       r"repeated within one operand \(a diagonal\)\)"):
        zcc.from_torch(Diagonal(), (x,), (torch.randn(2, 3),), loss=F.mse_loss)


def _attention_program(fused, rate=0.3, seed=11):
    """Causal attention over [2, 3, 70, 8] with its probabilities dropped
    out: fused (zt.attention's dropout) or written out (matmul, causal mask,
    softmax, zcc.ops.dropout at the same seed, matmul), trained by AdamW."""
    def step(x, target):
        q, k, v = (zcc.ops.swapaxes((x @ zcc.param(
            name, (24, 24), init=zcc.init.normal(0.0, 0.3))).reshape(
                2, 70, 3, 8), 1, 2) for name in ("wq", "wk", "wv"))
        if fused:
            y = zcc.ops.attention(q, k, v, causal=True, dropout=rate, seed=seed)
        else:
            scores = zcc.ops.matmul(q, k, transpose_b=True) * (1 / math.sqrt(8))
            p = zcc.ops.softmax(scores + zcc.ops.causal_mask(70), -1)
            y = zcc.ops.dropout(p, rate, seed=seed) @ v
        return zcc.ops.mse(zcc.ops.swapaxes(y, 1, 2).reshape(2, 70, 24), target)
    traced = zcc.trace(step, x=zcc.input([2, 70, 24]),
                       target=zcc.label([2, 70, 24], "float32"))
    return traced.compile(optimizer=zcc.adamw(lr=1e-2))


def test_attention_dropout_draws_dropouts_mask_in_the_kernel():
    # The fused kernel drops out exactly the probabilities zcc.ops.dropout
    # drops at the same seed and step, in the forward and (drawn again) in
    # the backward: the two programs train alike in f64 over 4 steps (each
    # a new mask), while the fused one never stores the probabilities.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 70, 24)).astype(np.float32)
    target = rng.standard_normal((2, 70, 24)).astype(np.float32)
    runs, arenas = {}, {}
    for fused in (True, False):
        compiled = _attention_program(fused)
        arenas[fused] = compiled.memory_analysis()["arena"]
        session = compiled.session(precision="f64")
        runs[fused] = [session.step(x, target) for _ in range(4)]
    assert np.allclose(runs[True], runs[False], rtol=1e-12, atol=0), runs
    # Without dropout the losses differ: the comparison sees the masks.
    plain = _attention_program(True, rate=0.0).session(precision="f64")
    assert abs(plain.step(x, target) - runs[True][0]) > 1e-6
    assert arenas[True] < arenas[False], arenas


class SdpaDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(16, 48)

    def forward(self, x):
        q, k, v = (t.unflatten(-1, (2, 8)).transpose(1, 2)
                   for t in self.qkv(x).split(16, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=0.2 if self.training else 0.0)
        return y.transpose(1, 2).flatten(2)


def test_sdpa_dropout_imports_into_the_fused_kernel():
    # SDPA's dropout_p (as transformers passes attention_dropout in
    # training) is the kernel's; eval mode has none. Planned, no-reuse and
    # poison runs are bit-identical.
    torch.manual_seed(1)
    x, target = torch.randn(2, 20, 16), torch.randn(2, 20, 16)
    traced = zcc.from_torch(SdpaDropout(), (x,), (target,), loss=F.mse_loss)
    ir = traced.ir()
    train_ir = ir[:ir.index("zt.entry = \"eval\"")]
    assert "dropout = 2.000000e-01" in train_ir
    assert ir.count("dropout = ") == 1, ir
    compiled = traced.compile(optimizer=zcc.adamw(lr=1e-2))
    runs = []
    for mode in ("planned", "no-reuse", "poison"):
        session = compiled.session(mode=mode)
        runs.append([session.step(x.numpy(), target.numpy()) for _ in range(3)])
    assert runs[0] == runs[1] == runs[2]
    assert len(set(runs[0])) == 3


def test_an_input_that_is_also_the_label_is_two_feeds():
    # torch.export reads one placeholder for a tensor passed twice; the
    # import gives each example its own storage, so the step reads the input
    # feed where the module reads its input (an autoencoder's x, x).
    torch.manual_seed(2)
    model = nn.Linear(4, 4)
    x = torch.randn(3, 4)
    session = zcc.from_torch(copy.deepcopy(model), (x,), (x,),
                             loss=F.mse_loss).compile(
        optimizer=zcc.sgd(lr=0.1)).session(precision="f64")
    reference = copy.deepcopy(model).double()
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(3):
        inputs, target = torch.randn(3, 4), torch.randn(3, 4)
        ours = session.step(inputs.numpy(), target.numpy())
        optimizer.zero_grad()
        loss = F.mse_loss(reference(inputs.double()), target.double())
        loss.backward()
        optimizer.step()
        assert abs(ours - loss.item()) <= 1e-9 * loss.item(), step
    assert session.eval(x.numpy(), (x + 1).numpy()) != session.eval(
        x.numpy(), x.numpy())


class IntegerPositions(nn.Module):
    """Integer arithmetic on data as transformers writes it: RoBERTa's
    position ids from the token ids (a mask cast to int, its running sum,
    products and sums of integers, casts between int32 and int64), a
    gather by them from a constant integer buffer and one from a float
    tensor, and the positions as embedding indices."""

    def __init__(self, pad=1):
        super().__init__()
        self.pad = pad
        self.tokens = nn.Embedding(20, 8, padding_idx=pad)
        self.positions = nn.Embedding(24, 8, padding_idx=pad)
        self.types = nn.Embedding(2, 8)
        self.register_buffer("type_ids", torch.zeros(1, 24, dtype=torch.long),
                             persistent=False)
        self.out = nn.Linear(8, 5)

    def forward(self, ids):
        mask = ids.ne(self.pad).int()
        incremental = torch.cumsum(mask, dim=1).type_as(mask) * mask
        positions = incremental.long() + self.pad
        types = torch.gather(self.type_ids.expand(ids.shape[0], -1), 1,
                             positions)
        h = self.tokens(ids) + self.positions(positions) + self.types(types)
        # A float gather by data: each position's features 0 or 1, by
        # whether its token is above 10 (an index of h's last dimension).
        picked = torch.gather(h, 2, (ids > 10).long()[..., None].expand(
            -1, -1, 8))
        return self.out(h + picked).flatten(0, 1)


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-5)])
def test_integer_arithmetic_on_data_trains_like_pytorch(precision, tolerance):
    torch.manual_seed(9)
    model = IntegerPositions()
    ids = torch.randint(2, 20, (3, 7))
    ids[0, 5:] = 1  # padding
    ids[2, :2] = 1
    labels = torch.randint(0, 5, (21,))
    traced = zcc.from_torch(copy.deepcopy(model), (ids,), (labels,),
                            loss=F.cross_entropy)
    ir = traced.ir()
    assert "zt.cumsum" in ir and "xi64> -> tensor" in ir, ir
    steps_like_pytorch(traced, model, (ids,), (labels,), F.cross_entropy,
                       precision, tolerance)


def test_gather_indices_out_of_range_are_step_errors():
    # torch.gather's index from data outside [0, size): the step reports the
    # lookup instead of reading a neighbouring line's element.
    class Picks(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x, index):
            return torch.gather(self.fc(x), 1, index)

    x, index = torch.randn(3, 4), torch.tensor([[0, 3], [1, 1], [2, 0]])
    session = zcc.from_torch(Picks(), (x, index), (torch.randn(3, 2),),
                             loss=F.mse_loss).compile().session()
    session.step(x.numpy(), index.numpy(), np.zeros((3, 2), np.float32))
    with pytest.raises(zcc.Error, match=r"embedding.*out of range"):
        session.step(x.numpy(), np.array([[0, 4], [1, 1], [2, 0]]),
                     np.zeros((3, 2), np.float32))


class WrittenOutRmsNorm(nn.Module):
    """An RMSNorm as transformers' Llama, Qwen2 and Mistral write it (casts
    to float32, pow, mean, rsqrt), weight first or last; over the last
    dimension, or (`dim=0`) over another, which is no RMSNorm."""

    def __init__(self, width, weight_first=True, dim=-1, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(width))
        self.weight_first, self.dim, self.eps = weight_first, dim, eps

    def forward(self, x):
        # transformers casts to float32; the weight's dtype is that in the
        # imported f32 module and keeps PyTorch's f64 reference all f64.
        x32 = x.to(self.weight.dtype)
        variance = x32.pow(2).mean(self.dim, keepdim=True)
        y = (x32 * torch.rsqrt(variance + self.eps)).to(x.dtype)
        return self.weight * y if self.weight_first else y * self.weight


class RmsNormed(nn.Module):
    def __init__(self, **norm):
        super().__init__()
        self.up = nn.Linear(20, 32)
        self.norm = WrittenOutRmsNorm(32, **norm)
        self.down = nn.Linear(32, 5)

    def forward(self, x):
        return self.down(self.norm(torch.relu(self.up(x))))


@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
@pytest.mark.parametrize("weight_first", [True, False])
def test_written_out_rms_norm_imports_as_rms_norm(weight_first, precision,
                                                 tolerance):
    # One zt.rms_norm (and its fused gradient) instead of pow, mean, add,
    # rsqrt and two muls: none of them is left in the plan, and it trains
    # to PyTorch's losses.
    torch.manual_seed(3)
    run = {}
    trains_like_pytorch(RmsNormed(weight_first=weight_first), 20, 5, precision,
                        tolerance, ("rms_norm",), run=run)
    launches = run["traced"].compile().planned_ir()
    assert '"rms_norm_grad"' in launches
    for op in ("pow", "mean", "rsqrt"):
        assert f'zplan.launch "{op}"' not in launches, op


def test_a_sum_of_squares_over_another_dimension_stays_written_out():
    # mean over dimension 0 is not an RMSNorm over the features: imported op
    # by op, and still PyTorch's losses.
    torch.manual_seed(4)
    ir = trains_like_pytorch(RmsNormed(dim=0), 20, 5, "f64", 1e-9, ("mean",))
    assert "zt.rms_norm " not in ir
