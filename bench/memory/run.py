"""Training-step memory: zcc's plan against PyTorch eager, GPT sizes up to
GPT-2 small.

    PYTHONPATH=build/python .cache/py-venv/bin/python bench/memory/run.py [--out FILE]

Each configuration is examples/python/nanogpt.py's GPT (pre-norm blocks,
causal attention, GELU, tied embeddings, cross-entropy, AdamW, f32, no
dropout) at that size, generated here:

- zcc: the module imported with zcc.from_torch and compiled; its arena (every
  activation, gradient and temporary of the step, planned) and its
  persistent bytes (parameters and AdamW's two moments).
- PyTorch eager: the bytes of live tensors during one training step
  (forward, backward, AdamW step, zero_grad), measured on the second step
  so the optimizer state exists, by a dispatch mode that adds each new
  storage's bytes when an op creates it and subtracts them when its last
  tensor dies; no allocator slack. The model runs under FakeTensorMode, so
  sizes as large as GPT-2 small are measured without computing. Reported
  with F.scaled_dot_product_attention (PyTorch picks its fused CPU kernel)
  and with the attention written out (the matrix materialized).
- The step's own bytes: PyTorch's peak less its parameters and optimizer
  state, the quantity zcc's arena is (gradients included in both).
- zcc without zt-autodiff's recomputation (compile(recompute=False)), to
  show what recomputing cheap values in the backward saves.
- XLA, where jax is installed: the same model and AdamW as one jitted JAX
  step (bench/memory/xla_gpt.py), compiled for the CPU backend from shapes;
  its memory_analysis() temp_size_in_bytes (parameters and optimizer state
  are donated arguments, not temporaries).
"""

import argparse
import math
import os
import sys
import time
import weakref

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "examples", "python"))
import nanogpt  # noqa: E402

import zcc  # noqa: E402

CONFIGS = [  # layers, width, heads, sequence, batch, vocabulary
    (2, 64, 4, 16, 2, 128),
    (4, 256, 4, 128, 8, 512),
    (6, 384, 6, 256, 8, 8192),
    (12, 768, 12, 512, 8, 50304),
    (12, 768, 12, 1024, 8, 50304),
]


class LiveBytes(TorchDispatchMode):
    """Live storage bytes and their peak, over every op dispatched."""

    def __init__(self):
        super().__init__()
        self.live = 0
        self.peak = 0
        self.tracked = set()

    def track(self, tensor):
        storage = tensor.untyped_storage()
        key = id(storage)
        if key in self.tracked:
            return
        nbytes = storage.nbytes()
        self.tracked.add(key)
        self.live += nbytes
        self.peak = max(self.peak, self.live)
        weakref.finalize(storage, self._free, key, nbytes)

    def _free(self, key, nbytes):
        self.tracked.discard(key)
        self.live -= nbytes

    def reset_peak(self):
        self.peak = self.live

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for leaf in tree_leaves(out):
            if isinstance(leaf, torch.Tensor):
                self.track(leaf)
        return out


def torch_peak(config, fused, autocast=False):
    """(peak bytes of the second step, bytes of parameters + AdamW state);
    `autocast`: the forward under torch.autocast("cpu", torch.bfloat16)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    layers, width, heads, sequence, batch, vocab = config
    with FakeTensorMode():
        model = nanogpt.GPT(vocab, sequence, width, heads, layers,
                            fused_attention=fused)
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4,
                                      foreach=False)
        tokens = torch.randint(0, vocab, (batch, sequence))
        targets = torch.randint(0, vocab, (batch, sequence))

        def step():
            with torch.autocast("cpu", dtype=torch.bfloat16,
                                enabled=autocast):
                loss = nanogpt.lm_loss(model(tokens), targets)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        peak, persistent = second_step_bytes(list(model.parameters()),
                                             (tokens, targets), step)
        return peak + persistent, persistent


def second_step_bytes(tensors, inputs, step):
    """Live bytes around `step()` run twice (the optimizer's state exists
    in the second): the second's peak above what lived before it, and what
    lived before it (`tensors`, the optimizer state), `inputs` left out."""
    counter = LiveBytes()
    with counter:
        for t in list(tensors) + list(inputs):
            counter.track(t)
        for i in range(2):
            if i == 1:
                counter.reset_peak()
                before = counter.live
            step()
    return counter.peak - before, before - sum(t.nbytes for t in inputs)


def zcc_traced(config):
    layers, width, heads, sequence, batch, vocab = config
    torch.manual_seed(0)
    model = nanogpt.GPT(vocab, sequence, width, heads, layers)
    tokens = torch.randint(0, vocab, (batch, sequence))
    return zcc.from_torch(model, (tokens,), (tokens,), loss=nanogpt.lm_loss)


def zcc_memory(config, recompute=True, precision="f32"):
    return zcc_traced(config).compile(optimizer=zcc.adamw(lr=3e-4),
                                      recompute=recompute,
                                      precision=precision).memory_analysis()


def zcc_budget(config, fraction, arena):
    """The arena under a budget of `fraction` of `arena` and the FLOPs it
    adds, or the smallest arena recomputation reaches (an error)."""
    try:
        memory = zcc_traced(config).compile(
            optimizer=zcc.adamw(lr=3e-4),
            memory_budget=int(fraction * arena)).memory_analysis()
    except zcc.Error as e:
        return None, str(e).split("reaches: ")[1].split(" bytes")[0]
    return memory, None


def xla_memory(config):
    """XLA's temporary bytes for the same step (bench/memory/xla_gpt.py),
    or None where jax is not installed."""
    try:
        import xla_gpt
    except ImportError:
        return None
    return xla_gpt.xla_step_bytes(config).temp_size_in_bytes


def mib(n):
    return f"{n / 2**20:,.1f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results.md"))
    parser.add_argument("--largest", type=int, default=len(CONFIGS),
                        help="measure the first N configurations")
    args = parser.parse_args()
    try:
        import jax
        xla = (f"XLA: jax {jax.__version__}'s CPU backend, temp_size_in_bytes of "
               "the jitted step's compile().memory_analysis() (bench/memory/xla_gpt.py)")
    except ImportError:
        xla = "XLA: not measured (jax is not installed here)"
    lines = [
        f"zcc plan against PyTorch {torch.__version__} eager (live-tensor bytes "
        "of one training step, AdamW state existing, no allocator slack), "
        "f32, MiB; " + xla,
        "",
        "| GPT (layers, width, heads, sequence, batch, vocabulary) | zcc arena "
        "| zcc, no recomputation | PyTorch step, SDPA | PyTorch step, attention "
        "written out | XLA temporaries (CPU) | zcc / PyTorch SDPA | zcc / XLA "
        "| zcc persistent | PyTorch persistent | zcc total | PyTorch total, SDPA |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    budgets = []
    for config in CONFIGS[:args.largest]:
        start = time.perf_counter()
        memory = zcc_memory(config)
        kept = zcc_memory(config, recompute=False)
        xla_bytes = xla_memory(config)
        sdpa_peak, persistent = torch_peak(config, fused=True)
        math_peak, _ = torch_peak(config, fused=False)
        sdpa_step, math_step = sdpa_peak - persistent, math_peak - persistent
        xla_cells = ("-", "-") if xla_bytes is None else (
            mib(xla_bytes), f"**{memory['arena'] / xla_bytes:.2f}**")
        lines.append(
            f"| {', '.join(map(str, config))} | {mib(memory['arena'])} | "
            f"{mib(kept['arena'])} | {mib(sdpa_step)} | {mib(math_step)} | "
            f"{xla_cells[0]} | **{memory['arena'] / sdpa_step:.2f}** | "
            f"{xla_cells[1]} | {mib(memory['persistent'])} | {mib(persistent)} | "
            f"{mib(memory['arena'] + memory['persistent'])} | {mib(sdpa_peak)} |")
        print(lines[-1], f"({time.perf_counter() - start:.1f} s)", flush=True)
        autocast_peak, autocast_persistent = torch_peak(config, fused=True,
                                                        autocast=True)
        budgets.append((config, memory, sdpa_step,
                        autocast_peak - autocast_persistent))
    lines += [
        "",
        "Under a memory budget (`compile(memory_budget=)`, zt-remat: forward "
        "values recomputed in the backward), as a fraction of the arena above; "
        "the extra work is the recomputing launches' FLOPs over the step's "
        "(`memory_analysis()['recomputed_flops']`, with zt-autodiff's own "
        "cheap recomputation; \"not reached\" names the smallest arena "
        "recomputation reaches), MiB:",
        "",
        "| GPT | arena | at 75% | extra FLOPs | zcc / PyTorch SDPA | at 50% "
        "| extra FLOPs | zcc / PyTorch SDPA |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for config, memory, sdpa_step, _ in budgets:
        start = time.perf_counter()
        cells = []
        for fraction in (0.75, 0.5):
            tight, smallest = zcc_budget(config, fraction, memory["arena"])
            if tight is None:
                cells += [f"not reached (smallest {mib(int(smallest))})", "-", "-"]
            else:
                cells += [mib(tight["arena"]),
                          f"{100 * tight['recomputed_flops'] / tight['flops']:.1f}%",
                          f"**{tight['arena'] / sdpa_step:.2f}**"]
        lines.append(f"| {', '.join(map(str, config))} | {mib(memory['arena'])} | "
                     + " | ".join(cells) + " |")
        print(lines[-1], f"({time.perf_counter() - start:.1f} s)", flush=True)
    lines += [
        "",
        "PyTorch with autocast (the forward under torch.autocast(\"cpu\", "
        "torch.bfloat16): matrix products and attention in bf16, their "
        "results and what they save bf16; parameters, gradients and AdamW "
        "state f32), SDPA, the same live-tensor measure, MiB, against zcc's "
        "arena in f32 and with `compile(precision=\"bf16\")` (products, "
        "the element ops, dropout, moves, attention, normalizations, the "
        "residual stream and the logits in bf16; statistics, the loss and "
        "parameters f32):",
        "",
        "| GPT | PyTorch step, SDPA | PyTorch step, SDPA, autocast bf16 "
        "| autocast / f32 | zcc f32 arena | zcc bf16 arena | zcc bf16 / f32 "
        "| zcc f32 / PyTorch autocast | zcc bf16 / PyTorch autocast |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for config, memory, sdpa_step, autocast_step in budgets:
        bf16 = zcc_memory(config, precision="bf16")
        lines.append(
            f"| {', '.join(map(str, config))} | {mib(sdpa_step)} | "
            f"{mib(autocast_step)} | {autocast_step / sdpa_step:.2f} | "
            f"{mib(memory['arena'])} | {mib(bf16['arena'])} | "
            f"{bf16['arena'] / memory['arena']:.2f} | "
            f"{memory['arena'] / autocast_step:.2f} | "
            f"**{bf16['arena'] / autocast_step:.2f}** |")
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as out:
        out.write("`PYTHONPATH=build/python .cache/py-venv/bin/python "
                  "bench/memory/run.py`\n\n" + text)
    print()
    print(text)


if __name__ == "__main__":
    main()
