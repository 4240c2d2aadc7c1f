"""One rank (or a lone process) of test_data_parallel.py's jobs: a small MLP
traced in Python, trained for 10 AdamW steps in f64 on fixed rows, each rank
on its share; rank 0 prints the losses and the parameters as JSON.

    [mpirun -np N] python dp_worker.py MODE ROWS_PER_RANK [CLIP]

MODE: single (no data parallelism), dp (data_parallel=True), zero (ZeRO-1
over 2 ranks). CLIP: clip_grad_norm, with buckets of 1 KiB (several).
"""
import json
import sys

import numpy as np

import zcc

mode, rows = sys.argv[1], int(sys.argv[2])
clip = float(sys.argv[3]) if len(sys.argv) > 3 else None


def loss_fn(x, y):
    w1 = zcc.param("w1", (16, 32), init=zcc.init.uniform(-0.25, 0.25))
    b1 = zcc.param("b1", (32,))
    w2 = zcc.param("w2", (32, 4), init=zcc.init.uniform(-0.2, 0.2))
    return zcc.ops.cross_entropy(zcc.ops.relu(x @ w1 + b1) @ w2, y)


traced = zcc.trace(loss_fn, x=zcc.input((rows, 16)), y=zcc.label((rows,), "int32"))
compiled = traced.compile(optimizer=zcc.adamw(lr=1e-2), data_parallel=mode != "single",
                          shard_optimizer_state=mode == "zero",
                          world_size=2 if mode == "zero" else None,
                          clip_grad_norm=clip,
                          bucket_bytes=1024 if clip and mode != "single" else None)
session = compiled.session(precision="f64", distributed=mode != "single")
rank, world = session.rank, session.world_size
data = np.random.default_rng(3)
images = data.normal(size=(400, 16)).astype(np.float32)
labels = data.integers(0, 4, size=400).astype(np.int32)
losses, norms = [], []
for step in range(10):
    # The job's batch: rows [step * world * rows, ...), rank r its share.
    begin = (step * world + rank) * rows
    loss = session.step(images[begin:begin + rows], labels[begin:begin + rows])
    losses.append(loss)
    if clip:
        norms.append(float(session.read("grad_norm")))
if rank == 0:
    print(json.dumps({"rank": rank, "world": world, "losses": losses,
                      "grad_norms": norms,
                      "params": {n: session.read(n).tolist() for n in ("w1", "b1", "w2")}}))
