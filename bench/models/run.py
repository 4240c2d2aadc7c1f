"""Real-size models from transformers and torchvision: zcc's training step
against PyTorch eager's, memory and CPU time, side by side in one run.

    PYTHONPATH=build/python .cache/py-venv/bin/python bench/models/run.py \
        [--steps N] [--threads T] [--only llama|resnet50] [--out FILE]

The models (f32, AdamW, no dropout):

- Llama: transformers' LlamaForCausalLM, 12 layers, width 768, 12 heads
  sharing 4 key/value heads (grouped-query attention), MLP width 2048,
  vocabulary 32000, sequence 1024, SDPA; cross-entropy over every token.
- ResNet-50: torchvision's, batch 32, 224x224 images, 1000 classes,
  BatchNorm in training (its running statistics updated by the step).

Memory, as bench/memory/run.py measures it: zcc's planned arena (every
activation, gradient and temporary of the step) against the peak of
PyTorch's live tensor bytes during its second step (forward, backward,
AdamW, zero_grad; a dispatch mode that counts each storage from creation to
its last reference, no allocator slack) less its parameters and optimizer
state; PyTorch runs under FakeTensorMode there, so nothing is computed.

CPU time: zcc's CPU executor (the plan imported with zcc.from_torch) and
PyTorch eager training copies of the same weights on the same batch, one
step each in turn after one warm-up step each, both with T threads; the
medians of N steps. Time is measured at batch `--time-batch` for Llama (a
step at batch 1 already takes seconds on a small machine); memory at the
batch above and at that one.
"""

import argparse
import copy
import os
import platform
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "memory"))
from run import mib, second_step_bytes  # noqa: E402  (bench/memory/run.py)

import zcc  # noqa: E402

SEQUENCE, VOCAB = 1024, 32000
IMAGE, CLASSES = 224, 1000


class TokenLogits(torch.nn.Module):
    """A causal LM's logits, one row per token (the loss is cross-entropy
    over [tokens, vocabulary])."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(ids).logits.flatten(0, 1)


def llama(batch):
    import transformers
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=768, intermediate_size=2048,
        num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=4,
        max_position_embeddings=SEQUENCE, attention_dropout=0.0,
        use_cache=False, attn_implementation="sdpa")
    torch.manual_seed(0)
    module = TokenLogits(transformers.LlamaForCausalLM(config))
    ids = torch.randint(0, VOCAB, (batch, SEQUENCE))
    labels = torch.randint(0, VOCAB, (batch * SEQUENCE,))
    return module, ids, labels


def resnet50(batch):
    import torchvision
    torch.manual_seed(0)
    module = torchvision.models.resnet50(num_classes=CLASSES)
    images = torch.randn(batch, 3, IMAGE, IMAGE)
    labels = torch.randint(0, CLASSES, (batch,))
    return module, images, labels


MODELS = {  # name: (builder, memory batch, time batch, description)
    "llama": (llama, 4, 1, "Llama (transformers LlamaForCausalLM): 12 "
              "layers, width 768, GQA 12/4 heads, sequence 1024"),
    "resnet50": (resnet50, 32, 32, "ResNet-50 (torchvision), 224x224"),
}


def torch_memory(build, batch):
    """(peak live bytes of PyTorch's second step less its parameters and
    AdamW state, those persistent bytes), computed on fake tensors."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        module, x, y = build(batch)
        module.train()
        optimizer = torch.optim.AdamW(module.parameters(), lr=1e-4,
                                      foreach=False)

        def step():
            F.cross_entropy(module(x), y).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        return second_step_bytes(
            list(module.parameters()) + list(module.buffers()), (x, y), step)


def zcc_compiled(build, batch):
    module, x, y = build(batch)
    module.train()
    traced = zcc.from_torch(module, (x,), (y,), loss=F.cross_entropy,
                            evaluate=False)
    return traced.compile(optimizer=zcc.adamw(lr=1e-4)), module, x, y


def step_times(build, batch, steps, threads):
    """Median ms per step of zcc and of PyTorch, alternating, and the
    losses of their first steps (the same weights and batch)."""
    compiled, module, x, y = zcc_compiled(build, batch)
    session = compiled.session(threads=threads)
    reference = copy.deepcopy(module)
    reference.train()
    optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-4)
    feeds = (x.numpy(), y.numpy())

    def torch_step():
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(reference(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    torch.set_num_threads(threads)
    first = (session.step(*feeds), torch_step())  # warm-up, compared
    ours, theirs = [], []
    for _ in range(steps):
        start = time.perf_counter()
        session.step(*feeds)
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        torch_step()
        theirs.append(time.perf_counter() - start)
    return (1000 * statistics.median(ours), 1000 * statistics.median(theirs),
            first)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--only", choices=sorted(MODELS), action="append")
    parser.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results.md"))
    args = parser.parse_args()
    names = args.only or list(MODELS)
    lines = [
        f"zcc against PyTorch {torch.__version__} eager, f32, AdamW; "
        f"{platform.machine()}, {os.cpu_count()} CPUs, {args.threads} "
        f"threads each",
        "",
        "Step memory (MiB; PyTorch: live tensor bytes of its second step, "
        "on fake tensors; zcc: the planned arena):",
        "",
        "| model | batch | zcc arena | PyTorch step | zcc / PyTorch "
        "| zcc persistent | PyTorch persistent |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    memory_rows, time_rows = [], []
    for name in names:
        build, memory_batch, time_batch, what = MODELS[name]
        for batch in sorted({memory_batch, time_batch}, reverse=True):
            start = time.perf_counter()
            theirs, persistent = torch_memory(build, batch)
            compiled = zcc_compiled(build, batch)[0]
            ours = compiled.memory_analysis()
            memory_rows.append(
                f"| {what} | {batch} | {mib(ours['arena'])} | {mib(theirs)} "
                f"| **{ours['arena'] / theirs:.2f}** | "
                f"{mib(ours['persistent'])} | {mib(persistent)} |")
            print(memory_rows[-1], f"({time.perf_counter() - start:.0f} s)",
                  flush=True)
    lines += memory_rows + [
        "",
        f"CPU step time (ms; medians of {args.steps} steps each, alternating, "
        "after one warm-up step each; the first losses, the same weights and "
        "batch, side by side):",
        "",
        "| model | batch | zcc | PyTorch eager | zcc / PyTorch | first loss, "
        "zcc | first loss, PyTorch |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        build, _, batch, what = MODELS[name]
        start = time.perf_counter()
        ours, theirs, (loss, torch_loss) = step_times(build, batch,
                                                      args.steps, args.threads)
        time_rows.append(
            f"| {what} | {batch} | {ours:,.0f} | {theirs:,.0f} | "
            f"**{ours / theirs:.2f}** | {loss:.6f} | {torch_loss:.6f} |")
        print(time_rows[-1], f"({time.perf_counter() - start:.0f} s)",
              flush=True)
    lines += time_rows
    text = "\n".join(lines) + "\n"
    command = ("`PYTHONPATH=build/python .cache/py-venv/bin/python "
               "bench/models/run.py" +
               "".join(f" --only {n}" for n in args.only or []) +
               (f" --steps {args.steps}" if args.steps != 3 else "") + "`")
    with open(args.out, "w") as out:
        out.write(command + "\n\n" + text)
    print()
    print(text)


if __name__ == "__main__":
    np.set_printoptions(precision=6)
    main()
