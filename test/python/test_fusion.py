"""zt-fuse-elementwise (on by default; zcc --fuse-elementwise=false): chains of
element ops run as one zt.fused launch each. A fused plan gives the unfused
plan's bits (each step of a program is rounded as its op stored it) on the
CPU, on the emulator and in every memory mode, in f32 and bf16, with fewer
launches and an arena no larger. So for zt-fuse-classifier (zcc
--fuse-classifier=false): the loss and the logits' gradient in one launch.
And for the updates that read mixed precision's bf16 gradients themselves
(zt-optimizer drops their conversions to f32)."""

import pytest

from test_mixed_precision import compile_plan, zrun


def trace(plan, *options):
    run = zrun(plan, "--steps", "3", "--trace", *options)
    assert run.returncode == 0, run.stderr
    lines = [l for l in run.stdout.splitlines() if l.startswith("step ")]
    assert len(lines) == 3, run.stdout
    return lines


def assert_same_bits(plan, reference, precision):
    """`plan` trains to `reference`'s bits on the CPU (1 and 2 threads, every
    memory mode, the f64 reference for f32 plans) and on the emulator (the
    CUDA executor's steps run on the host)."""
    expected = trace(reference, "--threads", "2")
    assert trace(plan, "--threads", "2") == expected
    assert trace(plan, "--threads", "1") == expected
    for mode in ("no-reuse", "poison"):
        assert trace(plan, "--mode", mode) == expected
    assert trace(plan, "--device", "emulator") == \
        trace(reference, "--device", "emulator")
    if precision == "f32":
        assert trace(plan, "--precision", "f64") == \
            trace(reference, "--precision", "f64")


def kernels(memory):
    return [l["kernel"] for l in memory["entries"][0]["launches"]]


def plans_with_and_without(tmp_path, precision, off):
    """The GPT example compiled as zcc compiles it and with the option `off`
    (`--x=false`): (plan, memory JSON) of each."""
    on = compile_plan(tmp_path, "on", "--precision", precision)
    return on, compile_plan(tmp_path, "off", "--precision", precision, off)


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_fused_plan_gives_the_unfused_bits(tmp_path, precision):
    (fused, fused_memory), (unfused, unfused_memory) = plans_with_and_without(
        tmp_path, precision, "--fuse-elementwise=false")
    with_fusion, without = kernels(fused_memory), kernels(unfused_memory)
    assert "fused" in with_fusion and "fused" not in without
    assert len(with_fusion) < len(without), (len(with_fusion), len(without))
    assert fused_memory["arena_bytes"] <= unfused_memory["arena_bytes"]
    print(f"{precision}: {len(without)} -> {len(with_fusion)} launches, "
          f"{with_fusion.count('fused')} fused; arena "
          f"{unfused_memory['arena_bytes']} -> {fused_memory['arena_bytes']}")
    assert_same_bits(fused, unfused, precision)


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_fused_classifier_gives_the_two_kernels_bits(tmp_path, precision):
    (fused, fused_memory), (apart, apart_memory) = plans_with_and_without(
        tmp_path, precision, "--fuse-classifier=false")
    with_fusion, without = kernels(fused_memory), kernels(apart_memory)
    assert with_fusion.count("softmax_cross_entropy_fused") == 1
    assert "softmax_cross_entropy" not in with_fusion
    assert "softmax_cross_entropy_grad" not in with_fusion
    assert without.count("softmax_cross_entropy") == 1
    assert without.count("softmax_cross_entropy_grad") == 1
    assert len(with_fusion) == len(without) - 1
    assert fused_memory["arena_bytes"] <= apart_memory["arena_bytes"]
    assert_same_bits(fused, apart, precision)


@pytest.mark.parametrize("optimizer,clip", [("adamw", False), ("sgd", False),
                                             ("adamw", True)])
def test_updates_reading_bf16_gradients_give_the_converted_bits(tmp_path,
                                                                optimizer,
                                                                clip):
    # Data parallelism reduces the f32 gradients, so it keeps their
    # conversions; at world size 1 its mean is the identity, and its
    # updates (and clipping's norm) are the conversions' bits.
    extra = ["--optimizer", optimizer] + (
        ["--momentum", "0.9"] if optimizer == "sgd" else []) + (
        ["--clip-grad-norm", "1"] if clip else [])
    direct, direct_memory = compile_plan(
        tmp_path, "direct", "--precision", "bf16", *extra)
    converted, converted_memory = compile_plan(
        tmp_path, "converted", "--precision", "bf16", *extra,
        "--data-parallel")
    updates = kernels(direct_memory).count(optimizer)
    assert updates > 0
    assert kernels(converted_memory).count(optimizer) == updates
    # A conversion fewer per bf16 gradient (the products' and the biases';
    # the norms' and the embedding's gradients are f32 already).
    dropped = (kernels(converted_memory).count("convert") -
               kernels(direct_memory).count("convert"))
    print(f"{optimizer}{' clipped' if clip else ''}: {updates} updates, "
          f"{dropped} conversions dropped")
    assert 0 < dropped < updates, (dropped, updates)
    assert direct_memory["arena_bytes"] <= converted_memory["arena_bytes"]
    assert_same_bits(direct, converted, "bf16")
