"""A nanoGPT-style GPT written as a plain torch.nn.Module, imported with
zcc.from_torch and trained by zcc, side by side with PyTorch's own training
of the same module from the same weights.

    python examples/python/nanogpt.py            # f32, 20 AdamW steps

Pre-norm blocks, causal F.scaled_dot_product_attention, GELU (exact erf),
tied token embedding and output head, cross-entropy.
"""

import argparse
import copy
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import zcc


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads, dropout, fused=True):
        super().__init__()
        self.heads = heads
        self.fused = fused  # F.scaled_dot_product_attention, else the math
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        if self.fused:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # the attention matrix materialized, as before SDPA
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.heads)
            mask = torch.ones(T, T, dtype=torch.bool).triu(1)
            y = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.dropout(self.proj(y))


class MLP(nn.Module):
    def __init__(self, width, dropout):
        super().__init__()
        self.fc = nn.Linear(width, 4 * width)
        self.gelu = nn.GELU()
        self.proj = nn.Linear(4 * width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.proj(self.gelu(self.fc(x))))


class Block(nn.Module):
    def __init__(self, width, heads, dropout, fused=True):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, dropout, fused)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = MLP(width, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab=128, sequence=16, width=64, heads=4, layers=2,
                 dropout=0.0, fused_attention=True):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(sequence, width)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList(Block(width, heads, dropout, fused_attention)
                               for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))

    @staticmethod
    def _init(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, 0.0, 0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, 0.0, 0.02)

    def forward(self, idx):
        T = idx.shape[1]
        pos = torch.arange(0, T, dtype=torch.long)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def lm_loss(logits, targets):
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def batches(count, batch, sequence, vocab, seed=0):
    """Fixed batches of a learnable task: each next token a fixed function
    of the current one."""
    rng = np.random.default_rng(seed)
    table = rng.integers(0, vocab, size=vocab)
    out = []
    for _ in range(count):
        tokens = rng.integers(0, vocab, size=(batch, sequence + 1))
        for t in range(1, sequence + 1):
            keep = rng.random(batch) < 0.8
            tokens[keep, t] = table[tokens[keep, t - 1]]
        out.append((tokens[:, :-1].copy(), tokens[:, 1:].copy()))
    return out


def get_lr(step, lr, warmup_steps=0, decay=None, decay_steps=0, min_lr=0.0):
    """nanoGPT's learning rate at optimizer step `step` (from 0): what
    zcc.lr_schedule(warmup_steps, decay, decay_steps, min_lr) computes."""
    if step < warmup_steps:
        return lr * (step + 1) / (warmup_steps + 1)
    if decay is None:
        return lr
    if step >= decay_steps:
        return min_lr
    ratio = (step - warmup_steps) / (decay_steps - warmup_steps)
    c = 0.5 * (1.0 + math.cos(math.pi * ratio)) if decay == "cosine" \
        else 1.0 - ratio
    return min_lr + c * (lr - min_lr)


def param_groups(model, weight_decay, decay_min_rank):
    """nanoGPT's configure_optimizers groups: weight decay on parameters of
    `decay_min_rank` or more dimensions only."""
    params = list(model.parameters())
    return [{"params": [p for p in params if p.dim() >= decay_min_rank],
             "weight_decay": weight_decay},
            {"params": [p for p in params if p.dim() < decay_min_rank],
             "weight_decay": 0.0}]


def train_both(model, data, steps, lr=1e-3, precision="f32", sgd=False,
               clip_grad_norm=None, norms=None, schedule=None, lrs=None,
               weight_decay=None, decay_min_rank=0, betas=(0.9, 0.999)):
    """Losses of zcc and of PyTorch training copies of `model` on `data`,
    with AdamW (or SGD, momentum 0.9), the gradients clipped by their
    global norm when `clip_grad_norm` is given (each step's norms before
    clipping, zcc's `grad_norm` and PyTorch's, are appended to `norms`).
    `schedule` (zcc.lr_schedule's arguments) changes the learning rate by
    step: zcc.lr_schedule in the plan, a LambdaLR of get_lr in PyTorch
    (each step's rates, zcc's `lr` and PyTorch's, are appended to `lrs`).
    `weight_decay` (None: each optimizer's default) applies to parameters of
    `decay_min_rank` or more dimensions only, as nanoGPT's groups."""
    if weight_decay is None:
        weight_decay = 0.0 if sgd else 0.01
    dtype = torch.float64 if precision == "f64" else torch.float32
    reference = copy.deepcopy(model).to(dtype)
    x0, y0 = (torch.from_numpy(a) for a in data[0])
    start = time.perf_counter()
    traced = zcc.from_torch(copy.deepcopy(model), (x0,), (y0,), loss=lm_loss)
    compiled = traced.compile(
        optimizer=zcc.sgd(lr=lr, momentum=0.9, weight_decay=weight_decay,
                          decay_min_rank=decay_min_rank) if sgd else
        zcc.adamw(lr=lr, betas=betas, weight_decay=weight_decay,
                  decay_min_rank=decay_min_rank),
        clip_grad_norm=clip_grad_norm,
        lr_schedule=zcc.lr_schedule(**schedule) if schedule else None)
    compile_seconds = time.perf_counter() - start
    session = compiled.session(precision=precision)
    groups = param_groups(reference, weight_decay, decay_min_rank)
    optimizer = (torch.optim.SGD(groups, lr=lr, momentum=0.9) if sgd else
                 torch.optim.AdamW(groups, lr=lr, betas=betas))
    scheduler = None
    if schedule:
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda k: get_lr(k, lr, **schedule) / lr)
    ours, theirs = [], []
    for step in range(steps):
        x, y = data[step % len(data)]
        ours.append(session.step(x, y))
        optimizer.zero_grad()
        loss = lm_loss(reference(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        if clip_grad_norm is not None:
            norm = torch.nn.utils.clip_grad_norm_(reference.parameters(),
                                                  clip_grad_norm)
            if norms is not None:
                norms.append((float(session.read("grad_norm")), norm.item()))
        if scheduler is not None and lrs is not None:
            lrs.append((float(session.read("lr")),
                        optimizer.param_groups[0]["lr"]))
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        theirs.append(loss.item())
    return ours, theirs, compiled, compile_seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--precision", choices=["f32", "f64"], default="f32")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = GPT()
    data = batches(4, batch=4, sequence=16, vocab=128)
    ours, theirs, compiled, seconds = train_both(model, data, args.steps,
                                                 precision=args.precision)
    memory = compiled.memory_analysis()
    print(f"import + compile: {seconds:.2f} s; arena {memory['arena']} bytes "
          f"(lower bound {memory['lower_bound']}), persistent "
          f"{memory['persistent']} bytes")
    print("step  zcc loss      PyTorch loss  relative difference")
    for step, (a, b) in enumerate(zip(ours, theirs)):
        print(f"{step:4d}  {a:.8f}  {b:.8f}  {abs(a - b) / abs(b):.2e}")


if __name__ == "__main__":
    main()
