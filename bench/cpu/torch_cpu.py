#!/usr/bin/env python3
"""PyTorch eager on the CPU, the same models as zcc's (bench/gpu/torch_bench.py
builds them op for op): times full training steps (forward, mean
cross-entropy, backward, AdamW) and prints `ms_per_step MEDIAN`.

    torch_cpu.py --model mlp|gpt [--gpt L,D,H,T,V[,F]] --batch B
                 [--steps N] [--warmup W] [--threads T] [--autocast-bf16]
                 [--clip-grad-norm C] [--lr-schedule W,D,MIN_LR]

--autocast-bf16 runs the loss under torch.autocast("cpu", bfloat16), the
peer of zcc --precision bf16. --lr-schedule steps a LambdaLR of nanoGPT's
get_lr (W warmup steps, cosine decay to MIN_LR at step D) after each
optimizer step, the peer of zcc --lr-warmup-steps W --lr-decay cosine
--lr-decay-steps D --min-lr MIN_LR.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
import torch  # noqa: E402  (installed by bench/cpu/run.sh)
import torch_bench as models  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "gpt"], required=True)
    ap.add_argument("--gpt", default=None)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--autocast-bf16", action="store_true")
    ap.add_argument("--clip-grad-norm", type=float, default=None,
                    help="clip_grad_norm_ between backward() and step()")
    ap.add_argument("--lr-schedule", default=None,
                    help="W,D,MIN_LR: warmup, then cosine decay (LambdaLR)")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    if a.gpt:
        try:
            models.use_gpt_sizes(a.gpt)
        except ValueError as exc:
            ap.error(f"--gpt: {exc}")
    torch.manual_seed(0)
    device = torch.device("cpu")
    params, loss_fn, make_batch = models.BUILDERS[a.model](a.batch, device)
    if a.autocast_bf16:
        f32_loss = loss_fn

        def loss_fn(batch):  # the same loss under autocast
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return f32_loss(batch)

    opt = torch.optim.AdamW(list(params.values()), **models.OPTIM_KW)
    batch = make_batch()
    scheduler = None
    if a.lr_schedule:
        warmup, decay, min_lr = a.lr_schedule.split(",")
        warmup, decay, lr = int(warmup), int(decay), models.OPTIM_KW["lr"]
        min_factor = float(min_lr) / lr

        def factor(k):  # nanoGPT's get_lr(k) / lr
            if k < warmup:
                return (k + 1) / (warmup + 1)
            if k >= decay:
                return min_factor
            r = (k - warmup) / (decay - warmup)
            return min_factor + 0.5 * (1 + math.cos(math.pi * r)) * (1 - min_factor)
        scheduler = torch.optim.lr_scheduler.LambdaLR(opt, factor)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(batch)
        loss.backward()
        if a.clip_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(list(params.values()),
                                           a.clip_grad_norm)
        opt.step()
        if scheduler is not None:
            scheduler.step()
        return loss

    ms, loss = models.cpu_step_ms(step, a.warmup, a.steps)
    if not torch.isfinite(loss):
        sys.exit(f"torch_cpu: non-finite loss {loss.item()}")
    print(f"ms_per_step {ms:.3f} threads {torch.get_num_threads()} "
          f"loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
