"""Trains a small GPT-2 from transformers on real text with zcc, then writes
the weights back into the PyTorch module and generates with it.

The text is on every machine without a download: this project's own docs
and README, as bytes (a vocabulary of 256), written to nanoGPT-style token
files (train.bin, val.bin). The PyTorch side is what a script already has: the
module, its AdamW over nanoGPT's two parameter groups and a LambdaLR warmup +
cosine schedule; zcc reads them (compile(optimizer=, lr_schedule=)), trains
on random windows of the token file (zcc.data.TokenFile), reports progress
and a validation loss every --eval-every steps, checkpoints the run (run
it again with the same --out to resume it), then session.sync_to puts the
trained weights into the module and transformers' model.generate writes
text with them::

    python examples/python/train_text.py --steps 600 --out /tmp/text
"""

import argparse
import glob
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import zcc
from nanogpt import get_lr  # nanoGPT's warmup + cosine (beside this file)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = 256  # bytes


class Logits(nn.Module):
    """The language model's logits flattened to [tokens, vocabulary], the
    shape cross-entropy takes with the flattened next tokens."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x).logits.flatten(0, 1)


def corpus(out):
    """The docs and README as bytes in train.bin and val.bin (the last
    tenth of each file held out): their paths."""
    paths = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + \
        [os.path.join(ROOT, "README.md")]
    train, val = [], []
    for path in paths:
        data = np.frombuffer(open(path, "rb").read(), np.uint8)
        cut = len(data) * 9 // 10
        train.append(data[:cut])
        val.append(data[cut:])
    os.makedirs(out, exist_ok=True)
    files = os.path.join(out, "train.bin"), os.path.join(out, "val.bin")
    for path, parts in zip(files, (train, val)):
        zcc.data.write_tokens(path, np.concatenate(parts))
    return files


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--eval-batches", type=int, default=8)
    ap.add_argument("--print-every", type=int, default=25)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default=os.path.join(ROOT, ".cache", "train_text"))
    ap.add_argument("--prompt", default="zcc is ")
    args = ap.parse_args(argv)

    import transformers
    train_file, val_file = corpus(args.out)
    train = zcc.data.TokenFile(train_file, args.batch, args.seq, seed=0)
    val = zcc.data.TokenFile(val_file, args.batch, args.seq, seed=0,
                             held_out=True)
    print(f"text: {train.tokens} training and {val.tokens} validation bytes "
          f"from docs/ and README.md")

    config = transformers.GPT2Config(
        vocab_size=VOCAB, n_positions=args.seq, n_embd=args.width,
        n_layer=args.layers, n_head=args.heads, resid_pdrop=0.0,
        embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False, bos_token_id=0,
        eos_token_id=0, attn_implementation="sdpa")
    torch.manual_seed(0)
    gpt = transformers.GPT2LMHeadModel(config)
    module = Logits(gpt)

    # The script's own optimizer and schedule, read by zcc.
    params = list(module.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.95))
    warmup = max(1, args.steps // 20)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda k: get_lr(k, args.lr, warmup_steps=warmup,
                                    decay="cosine", decay_steps=args.steps,
                                    min_lr=args.lr / 10) / args.lr)

    x, y = train.batch(0)
    started = time.perf_counter()
    traced = zcc.from_torch(module, (torch.from_numpy(x),),
                            (torch.from_numpy(y.reshape(-1)),),
                            loss=F.cross_entropy)
    compiled = traced.compile(optimizer=optimizer, lr_schedule=scheduler,
                              clip_grad_norm=1.0)
    memory = compiled.memory_analysis()
    print(f"import + compile: {time.perf_counter() - started:.1f} s; arena "
          f"{memory['arena'] / 2**20:.1f} MiB, parameters and AdamW state "
          f"{memory['persistent'] / 2**20:.1f} MiB")

    session = compiled.session(device=args.device)
    checkpoints = os.path.join(args.out, "checkpoints")
    first = session.resume(checkpoints)
    if first:
        print(f"resumed at step {first}")

    def validation():
        losses = [session.eval(v[0], v[1].reshape(-1))
                  for v in (val.batch(k) for k in range(args.eval_batches))]
        return float(np.mean(losses))

    tokens_per_step = args.batch * args.seq
    losses = []
    began = time.perf_counter()
    for k in range(first, args.steps):
        x, y = train.batch(k)
        losses.append(session.step(x, y.reshape(-1)))
        step = k + 1
        if step % args.print_every == 0 or step == args.steps:
            seconds = time.perf_counter() - began
            rate = (step - first) / seconds
            eta = (args.steps - step) / rate
            print(f"step {step}/{args.steps} loss {losses[-1]:.4f} lr "
                  f"{float(session.read('lr')):.2e}  ({rate:.1f} steps/s, "
                  f"{rate * tokens_per_step:.0f} tok/s, ETA {eta:.0f}s)")
        if step % args.eval_every == 0 or step == args.steps:
            print(f"eval after step {step}: validation loss {validation():.4f}")
    session.checkpoint(checkpoints)
    if losses:
        print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f} over {len(losses)} steps")

    # The trained weights back in the PyTorch module; transformers generates.
    session.sync_to(module)
    gpt.eval()
    prompt = torch.tensor([list(args.prompt.encode())])
    with torch.no_grad():
        out = gpt.generate(prompt, max_new_tokens=args.seq - prompt.shape[1],
                           do_sample=False, pad_token_id=0)
    text = bytes(out[0].tolist()).decode("utf-8", errors="replace")
    print("generated:", repr(text))
    return losses, text


if __name__ == "__main__":
    main()
