"""The memory timeline (zcc.memory/v1): valid against its schema, every
buffer once, the live-bytes peak at the arena when the plan is at its lower
bound, kinds and source locations where the model's code is."""

import collections
import json
import os
import subprocess
import sys

import jsonschema
import pytest
import torch

import zcc

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
import nanogpt  # noqa: E402

with open(os.path.join(ROOT, "docs", "zcc.memory-v1.schema.json")) as f:
    SCHEMA = json.load(f)


def gpt_plan(**kw):
    torch.manual_seed(0)
    model = nanogpt.GPT(vocab=128, sequence=32, width=64, heads=4, layers=2)
    x, y = (torch.from_numpy(a) for a in nanogpt.batches(1, 4, 32, 128)[0])
    return zcc.from_torch(model, (x,), (y,), loss=nanogpt.lm_loss).compile(**kw)


def test_gpt_timeline_is_valid_and_complete():
    compiled = gpt_plan()
    timeline = compiled.memory_timeline()
    jsonschema.validate(timeline, SCHEMA)
    (entry,) = timeline["entries"]
    # Every buffer of the plan once, in order.
    count = int(compiled.report().split(" launches, ")[1].split(" buffers")[0])
    assert [b["id"] for b in entry["buffers"]] == list(range(count))
    # At its lower bound, the plan's peak of live bytes is its arena.
    memory = compiled.memory_analysis()
    assert memory["arena"] == memory["lower_bound"] == entry["arena_bytes"]
    assert entry["peak_live_bytes"] == entry["arena_bytes"]
    assert entry["live_bytes"][entry["peak_launch"]] == entry["peak_live_bytes"]
    assert len(entry["live_bytes"]) == len(entry["launches"])
    # Live arena buffers never share bytes at one launch.
    arena = [b for b in entry["buffers"] if b["region"] == "arena"]
    for i, a in enumerate(arena):
        for b in arena[i + 1:]:
            if a["first_launch"] <= b["last_launch"] and b["first_launch"] <= a["last_launch"]:
                assert (a["offset"] + a["bytes"] <= b["offset"]
                        or b["offset"] + b["bytes"] <= a["offset"]), (a, b)
    kinds = collections.Counter(b["kind"] for b in entry["buffers"])
    for kind in ("activation", "saved_for_backward", "gradient", "workspace",
                 "persistent", "input"):
        assert kinds[kind] > 0, kinds
    phases = [l["phase"] for l in entry["launches"]]
    assert phases[0] == "forward" and "backward" in phases and "update" in phases
    # The forward's first backward launch comes after every forward launch.
    assert phases.index("backward") > max(i for i, p in enumerate(phases)
                                          if p == "forward")
    # Saved activations and gradients point at the model's source lines.
    for b in entry["buffers"]:
        if b["kind"] in ("saved_for_backward", "gradient") and b["op"] != "constant":
            assert "nanogpt.py:" in b["location"], b


def test_zcc_and_zrun_write_the_same_timeline(tmp_path):
    # From the source (zcc) and from the .zplan alone (zrun): the plan file
    # carries what the timeline needs.
    # ctest names the tools it built; by hand, build/bin if it is there.
    bin_dir = os.environ.get("ZCC_BIN_DIR")
    if bin_dir is None:
        bin_dir = os.path.join(ROOT, "build", "bin")
        if not os.path.exists(os.path.join(bin_dir, "zcc")):
            pytest.skip("zcc and zrun are not built in build/bin "
                        "(set ZCC_BIN_DIR)")
    example = os.path.join(ROOT, "examples", "gpt_block.mlir")
    plan, a, b = (str(tmp_path / n) for n in ("g.zplan", "a.json", "b.json"))
    subprocess.run([os.path.join(bin_dir, "zcc"), example, "-o", plan,
                    "--optimizer", "adamw", "--memory-json", a], check=True)
    subprocess.run([os.path.join(bin_dir, "zrun"), plan, "--steps", "0",
                    "--memory-json", b], check=True, capture_output=True)
    with open(a) as fa, open(b) as fb:
        left, right = json.load(fa), json.load(fb)
    assert left == right
    jsonschema.validate(left, SCHEMA)
    entry = left["entries"][0]
    assert entry["peak_live_bytes"] == entry["arena_bytes"]
    assert any("gpt_block.mlir:" in l["location"] for l in entry["launches"])


def test_accumulation_gives_each_entry_its_timeline():
    timeline = gpt_plan(accumulate=True).memory_timeline()
    jsonschema.validate(timeline, SCHEMA)
    kinds = [e["kind"] for e in timeline["entries"]]
    assert kinds == ["microbatch", "apply"]
    apply = timeline["entries"][1]
    assert {l["phase"] for l in apply["launches"]} == {"update"}
