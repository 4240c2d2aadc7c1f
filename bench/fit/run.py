"""compile(fit=...) on real-size models: the microbatch size, accumulation
and recomputation zcc chooses for devices of 16, 24, 40, 80 and 141 GB.

    PYTHONPATH=build/python .cache/py-venv/bin/python bench/fit/run.py \
        [--batch 64] [--precision bf16] [--only gpt2|llama] [--out FILE]

The models (AdamW, sequence 1024, cross-entropy over every token, the
global batch split into microbatches that accumulate):

- GPT-2 small: transformers' GPT2LMHeadModel, 12 layers, width 768, 12
  heads, vocabulary 50304.
- Llama: transformers' LlamaForCausalLM as bench/models/run.py builds it
  (12 layers, width 768, grouped-query attention 12/4, vocabulary 32000).

Every size and device is compiled here (no GPU needed): the plan's bytes
are exact. fit_reserve is the default 512 MiB (docs/runtime.md, "Fitting a
device"). Prints one table per model and device (compile(fit)'s report)
and a summary: the choice, its arena and the extra FLOPs.
"""

import argparse
import os
import time

import torch
import torch.nn.functional as F

import zcc


def _models_bench():
    """bench/models/run.py, by its path (it imports bench/memory/run.py as
    `run` itself)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "models", "run.py")
    spec = importlib.util.spec_from_file_location("zcc_bench_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_models = _models_bench()
SEQUENCE, TokenLogits, llama = _models.SEQUENCE, _models.TokenLogits, _models.llama

DEVICES_GB = (16, 24, 40, 80, 141)


def gpt2(batch):
    import transformers
    config = transformers.GPT2Config(
        vocab_size=50304, n_positions=SEQUENCE, n_embd=768, n_layer=12,
        n_head=12, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        use_cache=False, attn_implementation="sdpa")
    torch.manual_seed(0)
    module = TokenLogits(transformers.GPT2LMHeadModel(config))
    ids = torch.randint(0, 50304, (batch, SEQUENCE))
    labels = torch.randint(0, 50304, (batch * SEQUENCE,))
    return module, ids, labels


MODELS = {"gpt2": (gpt2, "GPT-2 small (transformers GPT2LMHeadModel)"),
          "llama": (llama, "Llama (transformers LlamaForCausalLM), 12 layers, "
                           "width 768, GQA 12/4")}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--only", choices=sorted(MODELS))
    parser.add_argument("--out")
    args = parser.parse_args()
    lines = [f"global batch {args.batch} x {SEQUENCE} tokens, {args.precision}, "
             "AdamW, fit_reserve 512 MiB", ""]
    summary = ["| model | device | microbatch x accumulation | result | "
               "arena (MiB) | other regions + reserve (MiB) | extra FLOPs | "
               "compile (s) |", "|---|---|---|---|---|---|---|---|"]
    for name, (build, title) in MODELS.items():
        if args.only and name != args.only:
            continue
        module, ids, labels = build(args.batch)
        module.train()
        traced = zcc.from_torch(module, (ids,), (labels,), loss=F.cross_entropy,
                                evaluate=False)
        # One import per microbatch size for all the devices.
        imports, reimport = {}, traced._reimport
        traced._reimport = lambda b: imports.setdefault(b, reimport(b))
        for gb in DEVICES_GB:
            started = time.perf_counter()
            try:
                compiled = traced.compile(optimizer=zcc.adamw(lr=6e-4),
                                          precision=args.precision,
                                          fit=f"{gb}GB")
                report = compiled.fit_report
                c = report.chosen
                extra = (f"{c['extra_share'] * 100:.2f}%"
                         if c["result"] == "recomputing" else "0")
                row = (f"| {title if gb == DEVICES_GB[0] else ''} | {gb} GB | "
                       f"{c['microbatch']} x {c['microbatches']} | "
                       f"{c['result']} | {c['arena'] / 2**20:.1f} | "
                       f"{c['other'] / 2**20:.1f} | {extra} | ")
                text = str(report)
            except zcc.OutOfMemoryError as error:
                row = f"| {title if gb == DEVICES_GB[0] else ''} | {gb} GB | - | no size fits | | | | "
                text = str(error)
            seconds = time.perf_counter() - started
            summary.append(row + f"{seconds:.0f} |")
            lines += [f"{title}, {gb} GB:", text, ""]
            print(lines[-3], lines[-2], sep="\n", flush=True)
    lines += summary
    print("\n".join(summary))
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
