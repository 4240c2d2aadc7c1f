#!/usr/bin/env python3
"""PyTorch baseline for zcc's CUDA-graph executor benchmark.

Builds the same two models as examples/mlp.mlir and examples/gpt_block.mlir in
PyTorch (explicit nn.Parameter tensors and functional ops, so the op sequence
mirrors the zt program) and times one full training step -- forward, mean
cross-entropy loss, backward, AdamW update -- two ways:

  eager  plain PyTorch eager execution, one Python-issued kernel at a time;
  graph  the whole step captured once with torch.cuda.graph (the documented
         whole-network capture recipe, AdamW with capturable=True) and replayed;
  eager-bf16, graph-bf16  the same under torch.autocast(bfloat16): matrix
         products in bf16 on tensor cores, f32 parameters and optimizer (the
         mixed-precision setup zcc's bf16 is measured against);
  ddp    eager under DistributedDataParallel on NCCL, one rank (world size
         1: DDP's bucketed all-reduce hooks and NCCL calls still run), the
         peer of zcc's --data-parallel plans on one GPU;
  compile, compile-bf16  the loss under torch.compile (TorchInductor's
         fused forward and backward kernels; AdamW eager, fused=True), the
         peer issue 48 names; the first warm-up step compiles;
  eager-tf32, graph-tf32, compile-tf32  f32 with TF32 matrix products
         (torch.backends.cuda.matmul.allow_tf32, what
         set_float32_matmul_precision("high") sets), the peer of zcc's
         --matmul-precision tf32; every other mode runs with TF32 off.

For each (model, batch, mode) it reports, over --steps timed steps each
followed by torch.cuda.synchronize() (zcc also waits for every step):
  * step time mean and median in microseconds (wall time per step);
  * host time per step: Python time spent issuing the step, before the sync;
  * peak device memory (torch.cuda.max_memory_allocated, reset before the
    model is built) in MiB;
  * growth of torch.cuda.memory_allocated() across the timed steps, in bytes,
    showing whether memory stays flat across steps/replays.

Inputs are synthetic: a small pool of random batches is generated on the GPU
once, before timing, and reused, so host-side data generation is never timed.
Everything runs in f32 with TF32 disabled, matching zcc's plain f32 cuBLAS.

Run:
    python3 bench/gpu/torch_bench.py --steps 1000

If torch cannot be imported or no CUDA device is available the script prints
one line "torch_bench: skipped: <reason>" and exits 0; any other error exits
non-zero.
"""

import argparse
import gc
import math
import statistics
import sys
import time

# Shapes fixed by the .mlir examples.
MLP_IN, MLP_H1, MLP_H2, MLP_OUT = 784, 256, 128, 10
GPT_VOCAB, GPT_SEQ, GPT_D, GPT_HEADS, GPT_FF, GPT_LAYERS = 128, 16, 64, 4, 256, 2
GPT_HEAD_DIM = GPT_D // GPT_HEADS
GPT_DROPOUT = 0.1
LN_EPS = 1e-5

# Batch sizes per model for --sizes small/large.
BATCHES = {
    "mlp": {"small": 32, "large": 512},
    "gpt": {"small": 2, "large": 32},
    "llama": {"small": 8, "large": 8},
}

# Random batches pre-generated on the device per run; cycled through so that
# successive steps see different data without timing its generation.
DATA_POOL = 8

# Eager-stream warm-up iterations the capture recipe runs before capturing
# (lazy optimizer state, cuBLAS handles/workspaces, autograd setup).
CAPTURE_WARMUP = 3

OPTIM_KW = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)


def skip(reason):
    print(f"torch_bench: skipped: {reason}")
    sys.stdout.flush()
    sys.exit(0)


try:
    import torch
    import torch.nn.functional as F
except (ImportError, OSError) as exc:  # OSError: torch present but its libs won't load
    skip(f"torch is not importable ({exc})")


# ----------------------------------------------------------------------------
# Models. Each builder returns (params, loss_fn, make_batch): params is an
# ordered dict of name -> nn.Parameter (names as in the .mlir), loss_fn maps a
# tuple of input tensors to a scalar loss, make_batch draws one random input
# tuple on the device.
# ----------------------------------------------------------------------------


def _param(shape, device, init, *args):
    t = torch.empty(shape, device=device, dtype=torch.float32)
    with torch.no_grad():
        if init == "uniform":
            t.uniform_(args[0], args[1])
        elif init == "normal":
            t.normal_(mean=args[0], std=args[1])
        elif init == "zeros":
            t.zero_()
        elif init == "ones":
            t.fill_(1.0)
        else:
            raise ValueError(f"unknown init {init}")
    return torch.nn.Parameter(t)


def build_mlp(batch, device):
    # Uniform ranges are the ones in examples/mlp.mlir (about 1/sqrt(fan_in)).
    p = {
        "w1": _param((MLP_IN, MLP_H1), device, "uniform", -0.0357, 0.0357),
        "b1": _param((MLP_H1,), device, "zeros"),
        "w2": _param((MLP_H1, MLP_H2), device, "uniform", -0.0625, 0.0625),
        "b2": _param((MLP_H2,), device, "zeros"),
        "w3": _param((MLP_H2, MLP_OUT), device, "uniform", -0.0884, 0.0884),
        "b3": _param((MLP_OUT,), device, "zeros"),
    }

    def loss_fn(inputs):
        images, labels = inputs
        a1 = F.relu(images @ p["w1"] + p["b1"])
        a2 = F.relu(a1 @ p["w2"] + p["b2"])
        logits = a2 @ p["w3"] + p["b3"]
        return F.cross_entropy(logits, labels)  # mean over the batch

    def make_batch():
        images = torch.randn(batch, MLP_IN, device=device)
        # zt uses i32 labels; torch's cross_entropy needs int64 class indices.
        labels = torch.randint(0, MLP_OUT, (batch,), device=device, dtype=torch.long)
        return images, labels

    return p, loss_fn, make_batch


def build_gpt(batch, device):
    p = {
        "wte": _param((GPT_VOCAB, GPT_D), device, "normal", 0.0, 0.02),
        "wpe": _param((GPT_SEQ, GPT_D), device, "normal", 0.0, 0.02),
    }
    for h in range(GPT_LAYERS):
        pre = f"h{h}."
        p[pre + "ln1_g"] = _param((GPT_D,), device, "ones")
        p[pre + "ln1_b"] = _param((GPT_D,), device, "zeros")
        p[pre + "w_qkv"] = _param((GPT_D, 3 * GPT_D), device, "normal", 0.0, 0.02)
        p[pre + "b_qkv"] = _param((3 * GPT_D,), device, "zeros")
        p[pre + "w_o"] = _param((GPT_D, GPT_D), device, "normal", 0.0, 0.02)
        p[pre + "b_o"] = _param((GPT_D,), device, "zeros")
        p[pre + "ln2_g"] = _param((GPT_D,), device, "ones")
        p[pre + "ln2_b"] = _param((GPT_D,), device, "zeros")
        p[pre + "w_fc"] = _param((GPT_D, GPT_FF), device, "normal", 0.0, 0.02)
        p[pre + "b_fc"] = _param((GPT_FF,), device, "zeros")
        p[pre + "w_proj"] = _param((GPT_FF, GPT_D), device, "normal", 0.0, 0.02)
        p[pre + "b_proj"] = _param((GPT_D,), device, "zeros")
    p["lnf_g"] = _param((GPT_D,), device, "ones")
    p["lnf_b"] = _param((GPT_D,), device, "zeros")

    scale = 1.0 / math.sqrt(GPT_HEAD_DIM)  # zt.attention's scale

    def heads(t):
        # [B,T,64] -> [B,T,4,16] -> [B,4,T,16]
        return t.reshape(batch, GPT_SEQ, GPT_HEADS, GPT_HEAD_DIM).transpose(1, 2)

    def loss_fn(inputs):
        tokens, targets = inputs
        x = F.embedding(tokens, p["wte"]) + p["wpe"]
        for h in range(GPT_LAYERS):
            pre = f"h{h}."
            # Pre-norm causal self-attention.
            a = F.layer_norm(x, (GPT_D,), p[pre + "ln1_g"], p[pre + "ln1_b"], LN_EPS)
            qkv = a @ p[pre + "w_qkv"] + p[pre + "b_qkv"]
            q = heads(qkv[..., 0:GPT_D])
            k = heads(qkv[..., GPT_D:2 * GPT_D])
            v = heads(qkv[..., 2 * GPT_D:3 * GPT_D])
            # zt.attention: PyTorch's fused kernel, the same function.
            ctx = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                 scale=scale)
            ctx = ctx.transpose(1, 2).reshape(batch, GPT_SEQ, GPT_D)
            attn = ctx @ p[pre + "w_o"] + p[pre + "b_o"]
            x = x + F.dropout(attn, p=GPT_DROPOUT, training=True)
            # Pre-norm GELU MLP.
            m = F.layer_norm(x, (GPT_D,), p[pre + "ln2_g"], p[pre + "ln2_b"], LN_EPS)
            m = F.gelu(m @ p[pre + "w_fc"] + p[pre + "b_fc"], approximate="tanh")
            m = m @ p[pre + "w_proj"] + p[pre + "b_proj"]
            x = x + F.dropout(m, p=GPT_DROPOUT, training=True)
        x = F.layer_norm(x, (GPT_D,), p["lnf_g"], p["lnf_b"], LN_EPS)
        logits = x @ p["wte"].t()  # tied to the token embedding
        # Mean over all batch*seq positions.
        return F.cross_entropy(logits.reshape(-1, GPT_VOCAB), targets.reshape(-1))

    def make_batch():
        shape = (batch, GPT_SEQ)
        tokens = torch.randint(0, GPT_VOCAB, shape, device=device, dtype=torch.long)
        targets = torch.randint(0, GPT_VOCAB, shape, device=device, dtype=torch.long)
        return tokens, targets

    return p, loss_fn, make_batch


# The Llama-style model (llama_model.py; --llama sets its sizes): the module
# itself, as model_plans.py --bench imports it for zcc.
LLAMA_SIZES = None


def build_llama(batch, device):
    import llama_model

    sizes = LLAMA_SIZES or llama_model.DEFAULT_SIZES
    _, _, _, _, _, seq, vocab = llama_model.parse_sizes(sizes)
    module = llama_model.build(sizes).to(device)
    module.train()
    p = dict(module.named_parameters())

    def loss_fn(inputs):
        ids, labels = inputs
        return F.cross_entropy(module(ids), labels)

    def make_batch():
        ids = torch.randint(0, vocab, (batch, seq), device=device, dtype=torch.long)
        labels = torch.randint(0, vocab, (batch * seq,), device=device,
                               dtype=torch.long)
        return ids, labels

    return p, loss_fn, make_batch


BUILDERS = {"mlp": build_mlp, "gpt": build_gpt, "llama": build_llama}


# ----------------------------------------------------------------------------
# Timing.
# ----------------------------------------------------------------------------


def timed_loop(issue_step, steps):
    """Runs `steps` steps, synchronizing after each; returns per-step wall and
    host (issue-only) times in seconds."""
    wall, host = [], []
    for i in range(steps):
        t0 = time.perf_counter()
        issue_step(i)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append(t1 - t0)
        wall.append(t2 - t0)
    return wall, host


def cpu_step_ms(step, warmup, steps):
    """Calls `step()` `warmup` times untimed, then `steps` times timed (on
    the CPU: nothing to synchronize); returns the median milliseconds and
    the last call's result."""
    times, result = [], None
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        result = step()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times), result


def run_one(model, batch, mode, steps, warmup, device):
    torch.manual_seed(0)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats(device)

    params, loss_fn, make_batch = BUILDERS[model](batch, device)
    plist = list(params.values())
    pool = [make_batch() for _ in range(DATA_POOL)]

    precision = "f32"
    if mode.endswith("-tf32"):  # main() set allow_tf32 for this mode
        mode = mode[: -len("-tf32")]
    if mode.endswith("-bf16"):
        mode, precision = mode[: -len("-bf16")], "bf16"
        f32_loss = loss_fn

        def loss_fn(batch_):  # noqa: F811 -- the same loss under autocast
            # No cast cache: a captured graph must recast the updated weights.
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
                return f32_loss(batch_)

    if mode in ("eager", "ddp", "compile"):
        forward = loss_fn
        optim_extra = {}
        if mode == "compile":
            forward = torch.compile(loss_fn)
            optim_extra = {"fused": True}
        if mode == "ddp":
            import torch.distributed as dist
            if not dist.is_initialized():
                # One rank: an in-process store, no network.
                dist.init_process_group("nccl", store=dist.HashStore(), rank=0,
                                        world_size=1)
            forward = torch.nn.parallel.DistributedDataParallel(
                _LossModule(plist, loss_fn), device_ids=[device.index],
                gradient_as_bucket_view=True)
        opt = torch.optim.AdamW(plist, **OPTIM_KW, **optim_extra)
        last = {}

        def issue_step(i):
            opt.zero_grad(set_to_none=True)
            loss = forward(pool[i % DATA_POOL])
            loss.backward()
            opt.step()
            last["loss"] = loss

        for i in range(warmup):
            issue_step(i)
        torch.cuda.synchronize()
        get_loss = lambda: last["loss"]  # noqa: E731

    elif mode == "graph":
        # Whole-network capture recipe from the torch.cuda.graph docs.
        opt = torch.optim.AdamW(plist, capturable=True, **OPTIM_KW)
        static_inputs = tuple(t.clone() for t in pool[0])

        # Warm up on a side stream so lazy initialisation stays out of the
        # capture and off the capturing stream.
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(CAPTURE_WARMUP):
                opt.zero_grad(set_to_none=True)
                loss_fn(static_inputs).backward()
                opt.step()
        torch.cuda.current_stream(device).wait_stream(side)

        graph = torch.cuda.CUDAGraph()
        # Grads set to None so backward allocates them from the graph's pool.
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss = loss_fn(static_inputs)
            static_loss.backward()
            opt.step()

        def issue_step(i):
            for dst, src in zip(static_inputs, pool[i % DATA_POOL]):
                dst.copy_(src, non_blocking=True)
            graph.replay()

        for i in range(warmup):
            issue_step(i)
        torch.cuda.synchronize()
        get_loss = lambda: static_loss  # noqa: E731

    else:
        raise ValueError(f"unknown mode {mode}")

    mem_before = torch.cuda.memory_allocated(device)
    wall, host = timed_loop(issue_step, steps)
    mem_after = torch.cuda.memory_allocated(device)
    peak = torch.cuda.max_memory_allocated(device)

    # Sanity check that the step really trained on something sensible.
    final_loss = float(get_loss().item())
    if not math.isfinite(final_loss):
        raise RuntimeError(f"{model} batch {batch} {mode}: non-finite loss {final_loss}")
    print(f"torch_bench: {model} batch {batch} {mode} {precision}: final loss {final_loss:.4f}",
          file=sys.stderr)

    return {
        "mean_us": statistics.mean(wall) * 1e6,
        "median_us": statistics.median(wall) * 1e6,
        "host_us": statistics.mean(host) * 1e6,
        "peak_mib": peak / (1024 * 1024),
        "growth": mem_after - mem_before,
    }


class _LossModule(torch.nn.Module):
    """The parameters as a module and the loss as its forward: what DDP
    wraps (it hooks the gradients of a module's parameters)."""

    def __init__(self, plist, loss_fn):
        super().__init__()
        self.plist = torch.nn.ParameterList(plist)
        self.loss_fn = loss_fn

    def forward(self, batch_):
        return self.loss_fn(batch_)


def release_memory():
    # Drop the previous run's model, optimizer state and graph pool so the
    # next run's peak-memory figure starts from a clean allocator.
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


# ----------------------------------------------------------------------------
# Command line.
# ----------------------------------------------------------------------------


def use_gpt_sizes(text):
    """Makes build_gpt build the GPT at "L,D,H,T,V[,F]" (layers, width, heads,
    sequence, vocabulary, MLP width: 4 D by default), as gpt_model.py writes
    it for zcc. Raises ValueError for sizes that make no such model."""
    global GPT_LAYERS, GPT_D, GPT_HEADS, GPT_SEQ, GPT_VOCAB, GPT_FF, GPT_HEAD_DIM
    try:
        sizes = [int(v) for v in text.split(",")]
    except ValueError:
        raise ValueError("sizes must be integers") from None
    if len(sizes) not in (5, 6) or min(sizes) < 1 or sizes[1] % sizes[2]:
        raise ValueError("L,D,H,T,V[,F], positive, D a multiple of H")
    if len(sizes) == 5:
        sizes.append(4 * sizes[1])
    GPT_LAYERS, GPT_D, GPT_HEADS, GPT_SEQ, GPT_VOCAB, GPT_FF = sizes
    GPT_HEAD_DIM = GPT_D // GPT_HEADS


MODES = ("eager", "graph", "eager-bf16", "graph-bf16", "ddp", "ddp-bf16",
         "compile", "compile-bf16", "eager-tf32", "graph-tf32", "compile-tf32")


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Time a full PyTorch training step (eager and CUDA graph) "
        "for the zcc example models.")
    ap.add_argument("--model", choices=["mlp", "gpt", "llama", "all"],
                    default="all",
                    help="all: mlp and gpt; llama (transformers' "
                    "LlamaForCausalLM, bench/gpu/llama_model.py) on request")
    ap.add_argument("--batch", type=int, default=None,
                    help="run only this batch size (overrides --sizes)")
    ap.add_argument("--sizes", default="small,large",
                    help="comma list of small (model default: MLP 32, GPT 2) "
                    "and large (MLP 512, GPT 32); default both")
    ap.add_argument("--modes", default="eager,graph",
                    help="comma list of eager, graph, eager-bf16 and graph-bf16 "
                    "(autocast), ddp and ddp-bf16 (one-rank DDP on NCCL), "
                    "compile and compile-bf16 (torch.compile), eager-tf32, "
                    "graph-tf32 and compile-tf32 (f32 with TF32 products); "
                    "default eager,graph")
    ap.add_argument("--steps", type=int, default=1000, help="timed steps")
    ap.add_argument("--warmup", type=int, default=50, help="untimed steps first")
    ap.add_argument("--device-index", type=int, default=0)
    ap.add_argument("--gpt", default=None, metavar="L,D,H,T,V[,F]",
                    help="the GPT model at another size: layers, width, heads, "
                    "sequence, vocabulary and MLP width (default 4 D), as "
                    "bench/gpu/gpt_model.py writes it for zcc")
    ap.add_argument("--llama", default=None, metavar="L,D,H,KV,F,T,V",
                    help="the Llama-style model's sizes (llama_model.py; "
                    "default its benchmark size, as model_plans.py --bench "
                    "compiles it for zcc)")
    args = ap.parse_args(argv)
    if args.llama is not None:
        import llama_model
        try:
            llama_model.parse_sizes(args.llama)
        except ValueError as exc:
            ap.error(f"--llama: {exc}")
        global LLAMA_SIZES
        LLAMA_SIZES = args.llama
    if args.gpt is not None:
        try:
            use_gpt_sizes(args.gpt)
        except ValueError as exc:
            ap.error(f"--gpt: {exc}")

    args.sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    for s in args.sizes:
        if s not in ("small", "large"):
            ap.error(f"--sizes: unknown size {s!r} (use small, large)")
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in args.modes:
        if m not in MODES:
            ap.error(f"--modes: unknown mode {m!r} (use {', '.join(MODES)})")
    if args.batch is not None and args.batch < 1:
        ap.error("--batch must be positive")
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    if args.warmup < 0:
        ap.error("--warmup must be non-negative")
    return args


def main(argv=None):
    args = parse_args(argv)

    if not torch.cuda.is_available():
        skip("torch.cuda.is_available() is False")

    torch.cuda.set_device(args.device_index)
    device = torch.device("cuda", args.device_index)
    # zcc's f32 plans use plain f32 cuBLAS; keep PyTorch off TF32 paths
    # (the -tf32 modes turn it on for their own runs).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    models = ["mlp", "gpt"] if args.model == "all" else [args.model]
    if "llama" in models:
        try:
            import transformers  # noqa: F401
        except ImportError as exc:
            skip(f"the Llama-style model needs transformers ({exc})")
    configs = []
    for model in models:
        batches = ([args.batch] if args.batch is not None
                   else [BATCHES[model][s] for s in args.sizes])
        for batch in batches:
            for mode in args.modes:
                configs.append((model, batch, mode))

    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"GPU {torch.cuda.get_device_name(args.device_index)} "
          f"(steps {args.steps}, warmup {args.warmup})")
    print()
    print("| model | batch | mode | step time mean (us) | step time median (us) "
          "| host time per step (us) | peak memory (MiB) "
          "| memory growth over the run (bytes) |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    sys.stdout.flush()

    for model, batch, mode in configs:
        # TF32 products only where the mode asks (zcc --matmul-precision tf32).
        torch.backends.cuda.matmul.allow_tf32 = mode.endswith("-tf32")
        try:
            r = run_one(model, batch, mode, args.steps, args.warmup, device)
        except Exception as exc:  # noqa: BLE001 -- one failed peer, not the table
            if not mode.startswith("compile"):
                raise
            # torch.compile needs a working Inductor toolchain: say so, go on.
            release_memory()
            print(f"| {model} | {batch} | {mode} | failed: {type(exc).__name__}: "
                  f"{str(exc).splitlines()[0][:120] if str(exc) else ''} | | | | |")
            sys.stdout.flush()
            continue
        release_memory()
        print(f"| {model} | {batch} | {mode} | {r['mean_us']:.1f} "
              f"| {r['median_us']:.1f} | {r['host_us']:.1f} "
              f"| {r['peak_mib']:.2f} | {r['growth']} |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
