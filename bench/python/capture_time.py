"""Capture + compile time of a GPT imported from PyTorch, by stage.

    PYTHONPATH=build/python .cache/py-venv/bin/python bench/python/capture_time.py
        [--layers 12 --width 768 --heads 12 --sequence 1024 --batch 8 --vocab 50304]

The defaults are GPT-2 small's size (examples/python/nanogpt.py's GPT, batch
8). Prints seconds for torch.export (PyTorch's part), zcc's import (walking
the exported graph into zt ops, each verified), and zcc's compile (autodiff,
AdamW, liveness, the memory plan, the loader checks), best of --repeat, and
the plan's memory.
"""

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "examples", "python"))
import nanogpt  # noqa: E402

import zcc  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--sequence", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=50304)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nanogpt.GPT(vocab=args.vocab, sequence=args.sequence,
                        width=args.width, heads=args.heads, layers=args.layers)
    idx = torch.randint(0, args.vocab, (args.batch, args.sequence))
    best = {}
    for _ in range(args.repeat):
        traced = zcc.from_torch(model, (idx,), (idx,), loss=nanogpt.lm_loss)
        start = time.perf_counter()
        compiled = traced.compile(optimizer=zcc.adamw(lr=3e-4))
        timings = dict(traced.timings, **{"zcc compile": time.perf_counter() - start})
        for stage, seconds in timings.items():
            best[stage] = min(best.get(stage, seconds), seconds)
    memory = compiled.memory_analysis()
    params = sum(p.numel() for p in model.parameters())
    print(f"GPT {args.layers} layers, width {args.width}, {args.heads} heads, "
          f"sequence {args.sequence}, batch {args.batch}, vocabulary "
          f"{args.vocab} ({params / 1e6:.1f} M parameters); torch "
          f"{torch.__version__}; best of {args.repeat}")
    print()
    print("| stage | seconds |")
    print("|---|---:|")
    for stage in ("torch.export", "zcc import", "zcc compile"):
        print(f"| {stage} | {best[stage]:.2f} |")
    print(f"| **zcc (import + compile)** | **{best['zcc import'] + best['zcc compile']:.2f}** |")
    print()
    print(f"arena {memory['arena'] / 2**20:.1f} MiB (lower bound "
          f"{memory['lower_bound'] / 2**20:.1f} MiB), persistent "
          f"{memory['persistent'] / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
