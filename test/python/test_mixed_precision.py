"""bf16 mixed precision (zcc --precision bf16): matrix products on bf16
operands summed in f32, f32 master weights. The GPT example trains like
f32, every execution mode gives the same bits, and the f64 reference
refuses a bf16 plan."""

import json
import os
import re
import subprocess
import sys

import numpy as np

import pytest

from test_memory_timeline import ROOT, tools_dir

import zcc

EXAMPLE = os.path.join(ROOT, "examples", "gpt_block.mlir")


def compile_plan(tmp_path, name, *options):
    plan = str(tmp_path / f"{name}.zplan")
    memory = str(tmp_path / f"{name}.json")
    subprocess.run([os.path.join(tools_dir(), "zcc"), EXAMPLE, "-o", plan,
                    "--optimizer", "adamw", "--lr", "0.001",
                    "--memory-json", memory, *options],
                   check=True, capture_output=True, text=True)
    with open(memory) as f:
        return plan, json.load(f)


def zrun(plan, *options):
    return subprocess.run([os.path.join(tools_dir(), "zrun"), plan, *options],
                          capture_output=True, text=True)


def losses(output):
    return {int(m.group(1)): float(m.group(2))
            for m in re.finditer(r"^step (\d+)/\d+ loss (\S+)", output, re.M)}


def assert_within_two_percent(curves):
    """bf16's loss within 2% of f32's at every 20th of 200 steps."""
    assert sorted(curves["f32"]) == list(range(20, 201, 20))
    gaps = {s: abs(curves["bf16"][s] - curves["f32"][s]) / curves["f32"][s]
            for s in curves["f32"]}
    print("relative loss gap per 20 steps:", gaps)
    assert max(gaps.values()) < 0.02, gaps


def test_bf16_gpt_trains_within_two_percent_of_f32(tmp_path):
    f32_plan, f32_memory = compile_plan(tmp_path, "f32")
    bf16_plan, bf16_memory = compile_plan(tmp_path, "bf16", "--precision", "bf16")
    # The products' operands are bf16 arena tensors; the arena is smaller.
    types = [b["type"] for b in bf16_memory["entries"][0]["buffers"]]
    assert any(t.endswith("xbf16") for t in types), types
    assert not any(t.endswith("xbf16") for b in f32_memory["entries"][0]["buffers"]
                   for t in [b["type"]])
    assert bf16_memory["arena_bytes"] < f32_memory["arena_bytes"]
    curves = {}
    for name, plan in (("f32", f32_plan), ("bf16", bf16_plan)):
        run = zrun(plan, "--steps", "200", "--print-every", "20")
        assert run.returncode == 0, run.stderr
        curves[name] = losses(run.stdout)
    assert_within_two_percent(curves)
    # It trained (4.88 -> about 0.44), and bf16 really changed the numbers.
    assert curves["bf16"][200] < 0.2 * 4.88
    assert curves["bf16"] != curves["f32"]


def markov_tokens(path, vocab, seq, rows):
    """A language with entropy: each token is followed by one of four fixed
    successors (probabilities .55/.25/.12/.08, 1.13 nats), so the loss
    falls towards a floor instead of off a cliff, as on text."""
    rng = np.random.default_rng(7)
    successors = rng.integers(0, vocab, size=(vocab, 4))
    text = np.empty((rows, seq + 1), np.int32)
    text[:, 0] = rng.integers(0, vocab, rows)
    for t in range(seq):
        pick = rng.choice(4, size=rows, p=[0.55, 0.25, 0.12, 0.08])
        text[:, t + 1] = successors[text[:, t], pick]
    np.savez(path, tokens=text[:, :-1], targets=text[:, 1:])


def test_bf16_four_layer_gpt_trains_within_two_percent_of_f32(tmp_path):
    # The benchmarks' 4-layer configuration (width 256, 4 heads, sequence
    # 128, vocabulary 512) at batch 4, half their batch (half the test's
    # time); 200 batches of a Markov language.
    model = str(tmp_path / "gpt_mid.mlir")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gpu", "gpt_model.py"),
                    model, "--layers", "4", "--width", "256", "--heads", "4",
                    "--seq", "128", "--batch", "4", "--vocab", "512"], check=True)
    data = str(tmp_path / "markov.npz")
    markov_tokens(data, 512, 128, 4 * 200)
    curves = {}
    for precision in ("f32", "bf16"):
        plan = str(tmp_path / f"{precision}.zplan")
        subprocess.run([os.path.join(tools_dir(), "zcc"), model, "-o", plan,
                        "--optimizer", "adamw", "--lr", "0.001",
                        "--precision", precision],
                       check=True, capture_output=True, text=True)
        run = zrun(plan, "--steps", "200", "--print-every", "20", "--data", data)
        assert run.returncode == 0, run.stderr
        curves[precision] = losses(run.stdout)
    assert_within_two_percent(curves)
    # It learned most of the language (log 512 = 6.24 at the start, 1.13 the
    # floor; 1.61 at step 200 on 2026-11-28), and bf16 changed the numbers.
    assert curves["bf16"][200] < 1.7
    assert curves["bf16"] != curves["f32"]


def test_bf16_plan_gives_the_same_bits_in_every_mode(tmp_path):
    plan, _ = compile_plan(tmp_path, "bf16", "--precision", "bf16")
    traces = {}
    for mode in ("planned", "no-reuse", "poison"):
        run = zrun(plan, "--steps", "5", "--mode", mode, "--trace",
                   "--threads", "2")
        assert run.returncode == 0, run.stderr
        traces[mode] = [l for l in run.stdout.splitlines()
                        if l.startswith("step ")]
        assert len(traces[mode]) == 5
    assert traces["no-reuse"] == traces["planned"]
    assert traces["poison"] == traces["planned"]
    # One thread or two: the same bits (the host's bf16 products take their
    # blocks in a fixed order).
    run = zrun(plan, "--steps", "5", "--trace", "--threads", "1")
    assert [l for l in run.stdout.splitlines()
            if l.startswith("step ")] == traces["planned"]


def test_the_f64_reference_refuses_a_bf16_plan(tmp_path):
    plan, _ = compile_plan(tmp_path, "bf16", "--precision", "bf16")
    run = zrun(plan, "--steps", "1", "--precision", "f64")
    assert run.returncode != 0
    assert "precision f64 runs an f32 plan in f64, and this plan stores bf16" \
        in run.stderr, run.stderr
    assert run.stdout.count("step ") == 0


def test_precision_through_python_and_bad_values():
    with open(EXAMPLE) as f:
        text = f.read()
    f32 = zcc.compile_mlir(text)
    bf16 = zcc.compile_mlir(text, precision="bf16")
    assert bf16.memory_analysis()["arena"] < \
        f32.memory_analysis()["arena"]
    with pytest.raises(zcc.Error, match="option 'precision' must be 'f32' or 'bf16', got 'f16'"):
        zcc.compile_mlir(text, precision="f16")
    run = subprocess.run([os.path.join(tools_dir(), "zcc"), EXAMPLE, "-o",
                          os.devnull, "--precision", "fp8"],
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert "option 'precision' must be 'f32' or 'bf16', got 'fp8'" in run.stderr
