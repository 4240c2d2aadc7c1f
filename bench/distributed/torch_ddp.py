#!/usr/bin/env python3
"""PyTorch DistributedDataParallel on the CPU (gloo), the model zcc's bench
compiles (bench/gpu/torch_bench.py builds it op for op): times full training
steps (forward, mean cross-entropy, backward with DDP's bucketed gradient
all-reduce, AdamW) and rank 0 prints `ms_per_step MEDIAN`.

    torchrun --nproc_per_node N torch_ddp.py --gpt L,D,H,T,V --batch B
             [--steps S] [--warmup W] [--threads T]

With one process it runs the model without DDP (nothing to reduce).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
import torch  # noqa: E402  (installed by bench/distributed/run.sh)
import torch.distributed as dist  # noqa: E402
import torch_bench as models  # noqa: E402


class Step(torch.nn.Module):
    """The functional model's parameters registered as a module's, so that
    DDP hooks their gradients; forward is the loss."""

    def __init__(self, params, loss_fn):
        super().__init__()
        for name, p in params.items():
            self.register_parameter(name.replace(".", "_"), p)
        self.loss_fn = loss_fn

    def forward(self, batch):
        return self.loss_fn(batch)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpt", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clip-grad-norm", type=float, default=None,
                    help="clip_grad_norm_ after DDP's all-reduce")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if world > 1 else 0
    models.use_gpt_sizes(a.gpt)
    torch.manual_seed(0)
    params, loss_fn, make_batch = models.BUILDERS["gpt"](a.batch, torch.device("cpu"))
    step = Step(params, loss_fn)
    model = torch.nn.parallel.DistributedDataParallel(step) if world > 1 else step
    opt = torch.optim.AdamW(list(params.values()), **models.OPTIM_KW)
    torch.manual_seed(1 + rank)  # each rank its own batch
    batch = make_batch()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(batch)
        loss.backward()
        if a.clip_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(list(params.values()),
                                           a.clip_grad_norm)
        opt.step()
        return loss

    ms, loss = models.cpu_step_ms(step, a.warmup, a.steps)
    if not torch.isfinite(loss):
        sys.exit(f"torch_ddp: non-finite loss {loss.item()}")
    if rank == 0:
        print(f"ms_per_step {ms:.3f} ranks {world} "
              f"threads {torch.get_num_threads()} loss {loss.item():.4f}")
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
