"""Data parallelism from Python (docs/distributed.md): a model traced in
Python, compiled with data_parallel=True and run with
session(distributed=True) under `mpirun -np 2`, trains to the parameters of
one process at twice the batch; ZeRO-1 gives plain data parallelism's bits."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "dp_worker.py")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")

# scripts/install-deps.sh installs Open MPI, so CI runs these.
pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None,
                                reason="needs mpirun (Open MPI)")


def job(*args, ranks=None):
    cmd = [sys.executable, WORKER, *args]
    if ranks:
        cmd = ["mpirun", "-np", str(ranks)] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    assert len(lines) == 1, out.stdout  # rank 0 alone prints
    return json.loads(lines[0])


def test_two_ranks_match_one_process_at_twice_the_batch():
    single = job("single", "8")
    dp = job("dp", "4", ranks=2)
    assert (single["world"], dp["world"]) == (1, 2)
    # The same rows each step, one mean of 8 against a mean of two means of
    # 4 (f64: rounding alone), through 10 AdamW steps. (step() returns each
    # rank's loss on its own rows, as PyTorch DDP's would.)
    for name in ("w1", "b1", "w2"):
        np.testing.assert_allclose(dp["params"][name], single["params"][name],
                                   rtol=0, atol=1e-12, err_msg=name)


def test_zero_one_gives_the_bits_of_plain_data_parallelism():
    dp = job("dp", "4", ranks=2)
    zero = job("zero", "4", ranks=2)
    assert zero["losses"] == dp["losses"]
    assert zero["params"] == dp["params"]


def test_clipped_gradients_are_clipped_by_the_norm_of_the_mean():
    # The norm of the averaged gradients, as one process at twice the batch
    # (clip_grad_norm_ after DDP's all-reduce); ZeRO-1 sums each rank's
    # shards' squares and all-reduces the sum: another order, not the bits.
    single = job("single", "8", "0.05")
    dp = job("dp", "4", "0.05", ranks=2)
    zero = job("zero", "4", "0.05", ranks=2)
    unclipped = job("single", "8")
    # The grad_norm output is the job's norm (of the mean), above the limit
    # each step: every step is clipped.
    np.testing.assert_allclose(dp["grad_norms"], single["grad_norms"], rtol=1e-12)
    np.testing.assert_allclose(zero["grad_norms"], single["grad_norms"], rtol=1e-12)
    assert min(single["grad_norms"]) > 0.05, single["grad_norms"]
    for name in ("w1", "b1", "w2"):
        np.testing.assert_allclose(dp["params"][name], single["params"][name],
                                   rtol=0, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(zero["params"][name], dp["params"][name],
                                   rtol=0, atol=1e-12, err_msg=name)
    # The clipping bites: without it the parameters end elsewhere.
    moved = max(np.abs(np.array(unclipped["params"][n]) -
                       np.array(single["params"][n])).max()
                for n in ("w1", "b1", "w2"))
    assert moved > 1e-4, moved


def test_distributed_without_a_job_is_one_rank():
    # Not started by mpirun: MPI makes a job of this one process.
    alone = job("dp", "8")
    single = job("single", "8")
    assert alone["world"] == 1
    assert alone["losses"] == single["losses"]
