#!/usr/bin/env python3
"""Data-parallel training against one rank (docs/distributed.md).

usage: data_parallel.py EXAMPLES_DIR WORK_DIR

Trains the GPT example for 20 AdamW steps on the same rows of one .npz file:
one rank at batch 4, and twice each two ranks at batch 2 (mpirun
--oversubscribe), plain data parallel and with ZeRO-1. Prints the largest
parameter (and optimizer state) difference between one and two ranks against
its tolerance, whether the repeated 2-rank runs are bit for bit the same
(traces and checkpoints), whether ZeRO-1 gives plain data parallelism's bits,
whether the emulator (the CUDA executor's program on the host) gives the CPU's,
whether data parallelism keeps its bits with ZeRO-1 buckets smaller than a
gradient, recomputation under a memory budget and bf16 products, whether
gradients clipped by their global norm train as one rank's (plain and
ZeRO-1, the same norms printed), whether a learning-rate schedule does
(ZeRO-1, the same rates printed), and the persistent bytes per rank. Needs zcc, zrun and mpirun on PATH.
Exit status 1 when a check fails.
"""
import json
import os
import re
import struct
import subprocess
import sys
import zipfile

STEPS = 20
LR = 1e-3
ROWS = 64  # examples in the file; a step takes 4 of them


def largest_difference(a, b):
    """The largest |difference| of two checkpoints' tensors, element by
    element (the tensors of `a`)."""
    return max(abs(x - y) for k in a for x, y in zip(a[k], b[k]))


def run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.exit("failed (%d): %s\n%s%s" % (proc.returncode, " ".join(cmd),
                                            proc.stdout, proc.stderr))
    return proc.stdout


def write_data(path):
    """Tokens, and targets a fixed function of each token (learnable)."""
    state = 12345
    tokens = []
    for _ in range(ROWS * 16):
        state = (state * 1103515245 + 12345) % (1 << 31)
        tokens.append(state % 128)
    targets = [(7 * t + 3) % 128 for t in tokens]
    with zipfile.ZipFile(path, "w") as z:
        for name, values in (("tokens", tokens), ("targets", targets)):
            header = ("{'descr': '<i4', 'fortran_order': False, "
                      "'shape': (%d, 16), }" % ROWS)
            header += " " * (63 - (len(header) + 10) % 64) + "\n"
            z.writestr(name + ".npy",
                       b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) +
                       header.encode() +
                       b"".join(struct.pack("<i", v) for v in values))


def read_safetensors(path):
    """{name: list of floats} of an f32 safetensors file."""
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    data = blob[8 + size:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        begin, end = info["data_offsets"]
        out[name] = struct.unpack("<%df" % ((end - begin) // 4), data[begin:end])
    return out


def main():
    examples, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    source = open(os.path.join(examples, "gpt_block.mlir")).read()
    # Without dropout: its masks follow each element's place in the rank's
    # own batch, so one rank at batch 4 and two at batch 2 would drop other
    # elements (as PyTorch DDP's would).
    source, dropouts = re.subn(r"rate = 0\.1,", "rate = 0.0,", source)
    assert dropouts == 4, dropouts
    with open(os.path.join(work, "gpt2.mlir"), "w") as f:
        f.write(source)
    # The example at batch 4: every batch dimension is its leading 2.
    batch4 = source.replace("tensor<2x", "tensor<4x").replace("[0:2,", "[0:4,")
    with open(os.path.join(work, "gpt4.mlir"), "w") as f:
        f.write(batch4)
    data = os.path.join(work, "rows.npz")
    write_data(data)
    common = ["--optimizer", "adamw", "--lr", str(LR)]
    one = os.path.join(work, "one.zplan")
    two = os.path.join(work, "two.zplan")
    run(["zcc", os.path.join(work, "gpt4.mlir"), "-o", one] + common)
    zero = os.path.join(work, "zero.zplan")
    run(["zcc", os.path.join(work, "gpt2.mlir"), "-o", two,
         "--data-parallel", "--bucket-bytes", "0.05MiB"] + common)
    run(["zcc", os.path.join(work, "gpt2.mlir"), "-o", zero,
         "--data-parallel", "--bucket-bytes", "0.05MiB", "--shard-optimizer-state",
         "--world-size", "2"] + common)
    train = ["--data", data, "--steps", str(STEPS), "--trace"]
    checkpoints = {}
    traces = {}
    stats = {}
    for precision in ("f32", "f64"):
        ck = os.path.join(work, "one-%s.safetensors" % precision)
        run(["zrun", one, "--precision", precision, "--save-checkpoint", ck] +
            train)
        checkpoints[("one", precision)] = ck
        for kind, plan in (("two", two), ("zero", zero)):
            for attempt in ("a", "b"):
                ck = os.path.join(work, "%s-%s-%s.safetensors" % (
                    kind, precision, attempt))
                out = run(["mpirun", "-np", "2", "zrun", plan, "--precision",
                           precision, "--save-checkpoint", ck] + train,
                          env=env)
                traces[(kind, precision, attempt)] = [
                    l.split(" params ")[0] for l in out.splitlines()
                    if l.startswith("step ")]
                checkpoints[(kind, precision, attempt)] = ck
                stats[kind] = out

    ok = True
    for kind in ("two", "zero"):
        for precision in ("f32", "f64"):
            a, b = (traces[(kind, precision, x)] for x in "ab")
            same = a == b and len(a) == STEPS
            blobs = [open(checkpoints[(kind, precision, x)], "rb").read()
                     for x in "ab"]
            print("two 2-rank runs%s, %s: traces %s, checkpoints %s" % (
                " with ZeRO-1" if kind == "zero" else "", precision,
                "identical" if same else "DIFFER",
                "identical" if blobs[0] == blobs[1] else "DIFFER"))
            ok &= same and blobs[0] == blobs[1]

    # One rank at batch 4 against two at batch 2: the same rows, the same
    # mean gradient up to f32 rounding (a mean of two means of 32 losses
    # against one mean of 64), carried through 20 AdamW steps.
    for kind in ("two", "zero"):
        for precision, tolerance in (("f32", 2e-4), ("f64", 1e-6)):
            a = read_safetensors(checkpoints[("one", precision)])
            b = read_safetensors(checkpoints[(kind, precision, "a")])
            assert a.keys() == b.keys(), sorted(set(a) ^ set(b))
            worst, where = 0.0, ""
            for name in sorted(a):
                for x, y in zip(a[name], b[name]):
                    if abs(x - y) > worst:
                        worst, where = abs(x - y), name
            print("one rank at batch 4 vs two at batch 2%s, %s: %d tensors, "
                  "max |difference| %.3g (%s), tolerance %g: %s" % (
                      " with ZeRO-1" if kind == "zero" else "", precision,
                      len(a), worst, where, tolerance,
                      "ok" if worst <= tolerance else "FAIL"))
            ok &= worst <= tolerance

    # ZeRO-1 reduces the same sums as the all-reduce and updates the same
    # elements: the very bits of plain data parallelism.
    for precision in ("f32", "f64"):
        same = (traces[("two", precision, "a")] ==
                traces[("zero", precision, "a")])
        tensors = (read_safetensors(checkpoints[("two", precision, "a")]) ==
                   read_safetensors(checkpoints[("zero", precision, "a")]))
        print("ZeRO-1 against plain data parallel, %s: losses %s, "
              "checkpoint tensors %s" % (
                  precision, "identical" if same else "DIFFER",
                  "identical" if tensors else "DIFFER"))
        ok &= same and tensors

    # The CUDA executor's program (its collectives where NCCL would run them),
    # run on the host by the emulator: the CPU executor's bits, plain and
    # ZeRO-1.
    for kind, plan in (("two", two), ("zero", zero)):
        ck = os.path.join(work, "%s-emulator.safetensors" % kind)
        out = run(["mpirun", "-np", "2", "zrun", plan, "--device", "emulator",
                   "--save-checkpoint", ck] + train, env=env)
        trace = [l.split(" params ")[0] for l in out.splitlines()
                 if l.startswith("step ")]
        same = trace == traces[(kind, "f32", "a")]
        blobs = (open(ck, "rb").read() ==
                 open(checkpoints[(kind, "f32", "a")], "rb").read())
        print("two ranks on the emulator%s vs the CPU, f32: traces %s, "
              "checkpoints %s" % (" with ZeRO-1" if kind == "zero" else "",
                                  "identical" if same else "DIFFER",
                                  "identical" if blobs else "DIFFER"))
        ok &= same and blobs

    # ZeRO-1 with buckets smaller than a gradient (each larger one a bucket
    # of its own, reduce-scattered as it is); and data parallelism composed
    # with recomputation under a memory budget (recomputed values are the
    # values kept) and with bf16 products: plain data parallelism's bits.
    small = ["--bucket-bytes", "0.001MiB", "--shard-optimizer-state",
             "--world-size", "2"]
    budget = ["--memory-budget", "340000"]
    bf16 = ["--precision", "bf16"]
    # Weight decay on parameters of 2 or more dimensions only (nanoGPT's
    # groups): ZeRO-1 keeps the groups in separate buckets.
    groups = ["--weight-decay", "0.1", "--weight-decay-min-rank", "2"]
    for flags, name, precision, against, against_name in (
            (small, "with ZeRO-1 in buckets smaller than a gradient", "f64",
             [], ""),
            (["--bucket-bytes", "0.05MiB"] + budget,
             "recomputing under a memory budget", "f64", [], ""),
            (small + budget, "with ZeRO-1 recomputing under a memory budget",
             "f64", [], ""),
            (small + bf16, "with ZeRO-1 in bf16", "f32", bf16, " in bf16"),
            (["--bucket-bytes", "0.05MiB", "--shard-optimizer-state",
              "--world-size", "2"] + groups,
             "with ZeRO-1 and weight decay on weights only", "f64", groups,
             " with the same groups")):
        if not against:
            reference = checkpoints[("two", precision, "a")]
        else:
            plan = os.path.join(work, "against.zplan")
            run(["zcc", os.path.join(work, "gpt2.mlir"), "-o", plan,
                 "--data-parallel", "--bucket-bytes", "0.05MiB"] + against + common)
            reference = os.path.join(work, "against.safetensors")
            run(["mpirun", "-np", "2", "zrun", plan, "--precision",
                 precision, "--save-checkpoint", reference] + train, env=env)
        plan = os.path.join(work, "composed.zplan")
        report = run(["zcc", os.path.join(work, "gpt2.mlir"), "-o", plan,
                      "--data-parallel", "--report"] + flags + common)
        if budget[0] in flags:
            assert "recomputed" in report, report
        ck = os.path.join(work, "composed.safetensors")
        run(["mpirun", "-np", "2", "zrun", plan, "--precision", precision,
             "--save-checkpoint", ck] + train, env=env)
        same = read_safetensors(ck) == read_safetensors(reference)
        print("two ranks %s vs plain data parallel%s, %s: checkpoint "
              "tensors %s" % (name, against_name, precision,
                              "identical" if same else "DIFFER"))
        ok &= same

    # Accumulation: two ranks of two microbatches of 1 row (the apply entry
    # averages the accumulators; with ZeRO-1 it reduce-scatters them) see the
    # rows of two ranks at batch 2, so they reach the same parameters (f64).
    batch1 = source.replace("tensor<2x", "tensor<1x").replace("[0:2,", "[0:1,")
    with open(os.path.join(work, "gpt1.mlir"), "w") as f:
        f.write(batch1)
    reference = read_safetensors(checkpoints[("two", "f64", "a")])
    for zero_flags, name in (([], "accumulating"),
                             (["--shard-optimizer-state", "--world-size", "2"],
                              "accumulating with ZeRO-1")):
        plan = os.path.join(work, "acc.zplan")
        run(["zcc", os.path.join(work, "gpt1.mlir"), "-o", plan,
             "--data-parallel", "--bucket-bytes", "0.05MiB", "--accumulate",
             "--grad-scale", "0.5"] + zero_flags + common)
        ck = os.path.join(work, "acc.safetensors")
        run(["mpirun", "-np", "2", "zrun", plan, "--microbatches", "2",
             "--precision", "f64", "--save-checkpoint", ck] + train, env=env)
        got = read_safetensors(ck)
        worst = largest_difference(reference, got)
        print("two ranks %s 2 microbatches of 1 row vs two at batch 2, f64: "
              "max |difference| %.3g, tolerance 1e-06: %s" % (
                  name, worst, "ok" if worst <= 1e-6 else "FAIL"))
        ok &= worst <= 1e-6

    # Clipping by the global norm, below every step's norm: two ranks clip by
    # the norm of the averaged gradients (ZeRO-1: each rank's shards' sums of
    # squares all-reduced), as one rank at twice the batch, f64; the norms
    # zrun prints (before clipping) are the same; and the emulator's
    # collectives (the scalar's all-reduce too) give the CPU's bits.
    clip = ["--clip-grad-norm", "0.5"]
    untraced = ["--data", data, "--steps", str(STEPS)]

    def norms(out):
        return [l.split(" grad_norm ")[1] for l in out.splitlines()
                if l.startswith("step ") and " grad_norm " in l]
    plan = os.path.join(work, "one-clip.zplan")
    run(["zcc", os.path.join(work, "gpt4.mlir"), "-o", plan] + clip + common)
    ck = os.path.join(work, "one-clip.safetensors")
    one_norms = norms(run(["zrun", plan, "--precision", "f64",
                           "--save-checkpoint", ck] + untraced))
    reference = read_safetensors(ck)
    clipped = (len(one_norms) == STEPS and
               min(float(n) for n in one_norms) > 0.5)
    print("one rank at batch 4, clipped at 0.5, f64: grad_norm %s to %s "
          "over %d steps: %s" % (one_norms[0], one_norms[-1], len(one_norms),
                                 "every step clipped" if clipped else "FAIL"))
    ok &= clipped
    for zero_flags, name in (([], ""),
                             (["--shard-optimizer-state", "--world-size", "2"],
                              " with ZeRO-1")):
        plan = os.path.join(work, "clip.zplan")
        run(["zcc", os.path.join(work, "gpt2.mlir"), "-o", plan,
             "--data-parallel", "--bucket-bytes", "0.05MiB"] + clip + zero_flags +
            common)
        ck = os.path.join(work, "clip.safetensors")
        out = run(["mpirun", "-np", "2", "zrun", plan, "--precision", "f64",
                   "--save-checkpoint", ck] + untraced, env=env)
        got = read_safetensors(ck)
        worst = largest_difference(reference, got)
        same_norms = norms(out) == one_norms
        print("two ranks%s at batch 2 clipped vs one at batch 4, f64: max "
              "|difference| %.3g, tolerance 1e-06, grad_norm %s: %s" % (
                  name, worst, "the same" if same_norms else "DIFFERS",
                  "ok" if worst <= 1e-6 and same_norms else "FAIL"))
        ok &= worst <= 1e-6 and same_norms
        traced = []
        for device in ("cpu", "emulator"):
            out = run(["mpirun", "-np", "2", "zrun", plan, "--device", device,
                       "--data", data, "--steps", str(STEPS), "--trace"],
                      env=env)
            traced.append([l for l in out.splitlines()
                           if l.startswith("step ")])
        same = traced[0] == traced[1] and len(traced[0]) == STEPS
        print("two ranks%s clipped on the emulator vs the CPU, f32: traces "
              "%s" % (name, "identical" if same else "DIFFER"))
        ok &= same
    # Accumulating with ZeRO-1: the apply entry clips the scaled
    # accumulators' norm, reduce-scattered and summed over the ranks.
    plan = os.path.join(work, "acc-clip.zplan")
    run(["zcc", os.path.join(work, "gpt1.mlir"), "-o", plan, "--data-parallel",
         "--bucket-bytes", "0.05MiB", "--accumulate", "--grad-scale", "0.5",
         "--shard-optimizer-state", "--world-size", "2"] + clip + common)
    ck = os.path.join(work, "acc-clip.safetensors")
    out = run(["mpirun", "-np", "2", "zrun", plan, "--microbatches", "2",
               "--precision", "f64", "--save-checkpoint", ck] + untraced,
              env=env)
    got = read_safetensors(ck)
    worst = largest_difference(reference, got)
    same_norms = norms(out) == one_norms
    print("two ranks accumulating with ZeRO-1 2 microbatches of 1 row "
          "clipped vs one at batch 4, f64: max |difference| %.3g, tolerance "
          "1e-06, grad_norm %s: %s" % (
              worst, "the same" if same_norms else "DIFFERS",
              "ok" if worst <= 1e-6 and same_norms else "FAIL"))
    ok &= worst <= 1e-6 and same_norms

    # A learning-rate schedule (5 warmup steps, cosine decay to lr/10 at
    # step 15): every rank computes the same rate from its step counter, so
    # two ranks with ZeRO-1 train as one rank at twice the batch, printing
    # the same rates, and training ends elsewhere than at a constant rate.
    schedule = ["--lr-warmup-steps", "5", "--lr-decay", "cosine",
                "--lr-decay-steps", "15", "--min-lr", str(LR / 10)]

    def rates(out):
        return [l.split(" lr ")[1] for l in out.splitlines()
                if l.startswith("step ") and " lr " in l]
    plan = os.path.join(work, "one-lrs.zplan")
    run(["zcc", os.path.join(work, "gpt4.mlir"), "-o", plan] + schedule +
        common)
    ck = os.path.join(work, "one-lrs.safetensors")
    one_rates = rates(run(["zrun", plan, "--precision", "f64",
                           "--save-checkpoint", ck] + untraced))
    scheduled = read_safetensors(ck)
    plan = os.path.join(work, "lrs.zplan")
    run(["zcc", os.path.join(work, "gpt2.mlir"), "-o", plan, "--data-parallel",
         "--bucket-bytes", "0.05MiB", "--shard-optimizer-state", "--world-size",
         "2"] + schedule + common)
    ck = os.path.join(work, "lrs.safetensors")
    out = run(["mpirun", "-np", "2", "zrun", plan, "--precision", "f64",
               "--save-checkpoint", ck] + untraced, env=env)
    got = read_safetensors(ck)
    worst = largest_difference(scheduled, got)
    same_rates = rates(out) == one_rates and len(one_rates) == STEPS
    plan = os.path.join(work, "one-constant.zplan")
    run(["zcc", os.path.join(work, "gpt4.mlir"), "-o", plan] + common)
    ck = os.path.join(work, "one-constant.safetensors")
    run(["zrun", plan, "--precision", "f64", "--save-checkpoint", ck] +
        untraced)
    constant = read_safetensors(ck)
    apart = largest_difference(constant, scheduled)
    good = worst <= 1e-6 and same_rates and apart > 1e-3
    print("two ranks with ZeRO-1 at batch 2 with a cosine schedule (lr %s to "
          "%s) vs one at batch 4, f64: max |difference| %.3g, tolerance "
          "1e-06, lr the same every step; %.3g from a constant lr: %s" % (
              one_rates[0] if one_rates else "?",
              one_rates[-1] if one_rates else "?", worst, apart,
              "ok" if good else "FAIL"))
    ok &= good

    # Persistent bytes per rank: the parameters, plus the optimizer state
    # whole (plain) or one shard of it (ZeRO-1).
    def stat(kind, label):
        line = [l for l in stats[kind].splitlines() if l.strip().startswith(label)]
        return int(line[0].split()[len(label.split())]) if line else 0
    plain = stat("two", "persistent region")
    sharded = stat("zero", "persistent region")
    shard = stat("zero", "sharded state")
    params = sharded - shard
    state = plain - params
    print("persistent bytes per rank: plain %d, ZeRO-1 %d (%.2fx); optimizer "
          "state %d, ZeRO-1 %d (%.2fx)" % (plain, sharded, sharded / plain,
                                          state, shard, shard / state))
    ok &= 0.45 <= shard / state <= 0.55
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
