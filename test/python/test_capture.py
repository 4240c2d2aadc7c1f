"""The zcc package: tracing, compiling, sessions, and its errors."""

import inspect
import os
import re
import sys

import numpy as np
import pytest

import zcc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "examples", "python"))
from mlp import mlp_loss  # noqa: E402  (examples/python/mlp.py's program)


def line_of(marker):
    """The line of this file holding `marker` (a comment at the call)."""
    for number, text in enumerate(open(__file__), 1):
        if marker in text and "line_of" not in text:
            return number
    raise AssertionError(marker)


def here(marker):
    return f"{__file__}:{line_of(marker)}: error: "


def trace_mlp():
    return zcc.trace(mlp_loss, images=zcc.input((32, 784)),
                     labels=zcc.label((32,), "int32"))


def mixture(step, classes=10, width=784, rows=32, seed=7):
    """A learnable task: each row a class prototype plus noise."""
    prototypes = np.random.default_rng(seed).normal(size=(classes, width))
    rng = np.random.default_rng(1000 + step)
    labels = rng.integers(0, classes, size=rows).astype(np.int32)
    images = prototypes[labels] + rng.normal(size=(rows, width))
    return images.astype(np.float32), labels


def test_mlp_is_the_examples_program(examples):
    traced = trace_mlp()
    text = open(os.path.join(examples, "mlp.mlir")).read()
    optimizer = zcc.adamw(lr=1e-3, weight_decay=0.0)
    captured = traced.compile(optimizer=optimizer)
    written = zcc.compile_mlir(text, optimizer=optimizer)
    assert captured.memory_analysis() == written.memory_analysis()
    # The same plan, buffer for buffer and launch for launch; only the
    # launches' source locations differ (this file's lines, the example's).
    def without_locations(timeline):
        for entry in timeline["entries"]:
            for item in entry["launches"] + entry["buffers"]:
                item.pop("location")
        return timeline
    assert captured.plan.to_bytes() != written.plan.to_bytes()
    assert without_locations(captured.memory_timeline()) == \
        without_locations(written.memory_timeline())
    assert captured.report() == written.report()
    assert "zt.matmul" in traced.ir()
    assert traced.inputs == ["images"] and traced.labels == ["labels"]
    assert traced.parameters == ["w1", "b1", "w2", "b2", "w3", "b3"]


def test_locations_are_the_users_lines():
    traced = trace_mlp()
    text = traced.ir(locations=True)
    source, first = inspect.getsourcelines(mlp_loss)
    line = first + next(i for i, t in enumerate(source) if "relu(images" in t)
    assert f'mlp.py":{line}:0' in text, text


def test_mlp_trains_and_allocates_nothing_after_load():
    compiled = trace_mlp().compile(optimizer=zcc.adamw(lr=1e-3))
    memory = compiled.memory_analysis()
    assert memory["lower_bound"] <= memory["arena"] <= memory["no_reuse"]
    session = compiled.session(threads=1)
    losses = [session.step(*mixture(step)) for step in range(100)]
    assert losses[-1] < 0.5 * losses[0], losses
    stats = session.stats()
    assert stats["allocations_after_load"] == 0
    assert stats["arena"] == memory["arena"]


def test_modes_are_bit_identical():
    compiled = trace_mlp().compile(optimizer=zcc.sgd(lr=0.05, momentum=0.9))
    runs = []
    for mode in ("planned", "no-reuse", "poison"):
        session = compiled.session(mode=mode, threads=1)
        runs.append([session.step(*mixture(s)) for s in range(5)]
                    + [session.read("w1").tobytes()])
    assert runs[0] == runs[1] == runs[2]


def test_feeds_by_name_and_position_agree():
    compiled = trace_mlp().compile()
    a, b = compiled.session(), compiled.session()
    images, labels = mixture(0)
    assert a.step(images, labels) == b.step(labels=labels, images=images)


def test_read_write_save_load(tmp_path):
    compiled = trace_mlp().compile()
    session = compiled.session()
    w = np.arange(10, dtype=np.float32) / 10
    session.write("b3", w)
    assert np.array_equal(session.read("b3"), w)
    assert set(session.state_dict()) == {"w1", "b1", "w2", "b2", "w3", "b3"}
    path = tmp_path / "mlp.safetensors"
    session.save(path)
    other = compiled.session(seed=5)
    assert not np.array_equal(other.read("w1"), session.read("w1"))
    other.load(path)
    assert np.array_equal(other.read("w1"), session.read("w1"))
    assert np.array_equal(other.read("b3"), w)


def test_accumulation_takes_stacked_microbatches():
    compiled = trace_mlp().compile(optimizer=zcc.sgd(lr=0.05), accumulate=True)
    session = compiled.session(microbatches=2)
    batches = [mixture(0), mixture(1)]
    images = np.stack([b[0] for b in batches])
    labels = np.stack([b[1] for b in batches])
    loss = session.step(images, labels)
    # The step's loss is the microbatches' mean: each alone, before any update.
    single = trace_mlp().compile(optimizer=zcc.sgd(lr=0.05))
    one = [single.session().step(*b) for b in batches]
    assert loss == pytest.approx(np.mean(one), rel=1e-6)
    with pytest.raises(zcc.Error, match=r"expects shape \(2, 32, 784\) float32"):
        session.step(images[0], labels[0])


def test_accumulated_clipping_reports_the_norm_of_the_scaled_sum():
    # The apply entry clips grad_scale * (sum of the microbatches'
    # gradients); its grad_norm output against that norm from the
    # gradients themselves (optimizer=None), in f64.
    batches = [mixture(0), mixture(1)]
    grads = trace_mlp().compile(optimizer=None).session(precision="f64")
    total = {}
    for b in batches:
        grads.step(*b)
        for name in ("w1", "b1", "w2", "b2", "w3", "b3"):
            total[name] = total.get(name, 0) + grads.read(name + ".grad")
    expected = np.sqrt(sum(np.sum((0.5 * g) ** 2) for g in total.values()))
    compiled = trace_mlp().compile(optimizer=zcc.sgd(lr=0.05), accumulate=True,
                                   grad_scale=0.5, clip_grad_norm=0.01)
    session = compiled.session(microbatches=2, precision="f64")
    session.step(np.stack([b[0] for b in batches]),
                 np.stack([b[1] for b in batches]))
    assert session.read("grad_norm") == pytest.approx(expected, rel=1e-12)
    assert expected > 0.01  # clipped


def test_accumulation_schedules_by_optimizer_step():
    # Two microbatches per step: the apply entry's counter drives the
    # schedule, so step k's rate is get_lr(k) whatever the microbatches.
    compiled = trace_mlp().compile(
        optimizer=zcc.sgd(lr=0.05), accumulate=True, grad_scale=0.5,
        lr_schedule=zcc.lr_schedule(warmup_steps=2, decay="linear",
                                    decay_steps=4, min_lr=0.01))
    session = compiled.session(microbatches=2)
    batches = [mixture(0), mixture(1)]
    rates = []
    for _ in range(6):
        session.step(np.stack([b[0] for b in batches]),
                     np.stack([b[1] for b in batches]))
        rates.append(float(session.read("lr")))
    expected = [0.05 / 3, 0.1 / 3, 0.05, 0.03, 0.01, 0.01]
    np.testing.assert_allclose(rates, expected, rtol=1e-6)


def test_the_saved_plan_runs_in_a_new_session(tmp_path):
    compiled = trace_mlp().compile()
    path = tmp_path / "mlp.zplan"
    compiled.save(path)
    assert path.stat().st_size > 0


# Errors ---------------------------------------------------------------------


def test_shape_errors_name_the_line():
    def bad(x):
        w = zcc.param("w", (9, 3))
        return zcc.ops.sum(x @ w)  # MATMUL-ERROR

    with pytest.raises(zcc.Error) as info:
        zcc.trace(bad, x=zcc.input((4, 8)))
    message = str(info.value)
    assert message.startswith(here("# MATMUL-ERROR")), message
    assert "'zt.matmul' op contraction dimensions differ" in message


def test_broadcast_errors_name_the_line():
    def bad(x):
        b = zcc.param("b", (4,))
        return zcc.ops.sum(x + b)  # BROADCAST-ERROR

    with pytest.raises(zcc.Error) as info:
        zcc.trace(bad, x=zcc.input((4, 8)))
    assert str(info.value).startswith(here("# BROADCAST-ERROR"))
    assert "shapes [4, 8] and [4] do not broadcast" in str(info.value)


def test_unsupported_dtypes_name_the_line():
    with pytest.raises(zcc.Error) as info:
        zcc.input((2,), "float64")  # DTYPE-ERROR
    assert str(info.value).startswith(here("# DTYPE-ERROR"))
    assert "unsupported dtype 'float64'" in str(info.value)

    def bad(x):
        return zcc.ops.cross_entropy(x, x)  # LABEL-DTYPE-ERROR

    with pytest.raises(zcc.Error) as info:
        zcc.trace(bad, x=zcc.input((4, 8)))
    assert str(info.value).startswith(here("# LABEL-DTYPE-ERROR")), str(info.value)


def test_tracers_refuse_to_become_numbers():
    def branchy(x):
        if zcc.ops.sum(x):  # BOOL-ERROR
            return zcc.ops.sum(x)
        return zcc.ops.mean(x)

    with pytest.raises(TypeError, match="compiled ahead of time") as info:
        zcc.trace(branchy, x=zcc.input((2,)))
    assert str(info.value).startswith(here("# BOOL-ERROR")), str(info.value)

    def floaty(x):
        return float(zcc.ops.sum(x))

    with pytest.raises(TypeError, match=r"float\(\) needs the value"):
        zcc.trace(floaty, x=zcc.input((2,)))


def test_wrong_feeds_are_errors_not_rerecords():
    session = trace_mlp().compile().session()
    images, labels = mixture(0)
    with pytest.raises(zcc.Error, match=r"input 'images' expects shape "
                                        r"\(32, 784\) float32, got \(32, 783\)"):
        session.step(images[:, :783].copy(), labels)
    with pytest.raises(zcc.Error, match=r"label 'labels' expects shape \(32,\) "
                                        r"int32, got \(32,\) int64"):
        session.step(images, labels.astype(np.int64))
    with pytest.raises(zcc.Error, match="no value for label 'labels'"):
        session.step(images)
    with pytest.raises(zcc.Error, match="'extra' is not an input or label"):
        session.step(images, labels, extra=images)


def test_params_outside_a_trace_and_bad_returns():
    with pytest.raises(zcc.Error, match="no trace is running"):
        zcc.param("w", (2,))
    with pytest.raises(zcc.Error, match="must return the loss"):
        zcc.trace(lambda x: 1.0, x=zcc.input((2,)))
    with pytest.raises(zcc.Error, match="loss must be a rank-0 f32"):
        zcc.trace(lambda x: zcc.ops.relu(x), x=zcc.input((2,)))


def test_scopes_prefix_parameter_names():
    def f(x):
        with zcc.scope("h0"):
            with zcc.scope("attn"):
                w = zcc.param("w", (2,), init=zcc.init.ones())
        return zcc.ops.sum(x * w)

    traced = zcc.trace(f, x=zcc.input((2,)))
    assert traced.parameters == ["h0.attn.w"]


def test_operators_and_indexing():
    def f(x):
        w = zcc.param("w", (4, 6), init=zcc.init.ones())
        y = (x @ w) * 0.5 - 1.0
        y = 2.0 - y / 3.0 + (1.0 / (1.0 + zcc.ops.exp(-y)))
        z = y[:, 1:5:2] + y[0, :2]
        return (z.reshape(-1).sum() + y.T.mean()) / 2

    traced = zcc.trace(f, x=zcc.input((3, 4)))
    text = traced.ir()
    for op in ("zt.scale", "zt.slice", "zt.reshape", "zt.transpose",
               "zt.broadcast_in_dim", "zt.div", "zt.neg"):
        assert op in text, op
    compiled = traced.compile(optimizer=zcc.sgd(lr=0.1))
    loss = compiled.session().step(np.ones((3, 4), np.float32))
    # The same arithmetic in NumPy, from w = ones.
    x = np.ones((3, 4))
    y = (x @ np.ones((4, 6))) * 0.5 - 1.0
    y = 2.0 - y / 3.0 + 1.0 / (1.0 + np.exp(-y))
    z = y[:, 1:5:2] + y[0, :2]
    assert loss == pytest.approx((z.sum() + y.T.mean()) / 2, rel=1e-5)


def test_data_parallel_buckets_are_sized_from_the_gradients():
    traced = trace_mlp()
    # The MLP's gradients are under 1 MiB: one bucket by default, several
    # of 0.001 MiB when asked (a byte count as text, as zcc's flag reads it).
    auto = traced.compile(data_parallel=True).report()
    small = traced.compile(data_parallel=True, bucket_bytes="0.001MiB").report()
    count = lambda report: int(report.split("collectives  ")[1].split()[0])
    assert count(auto) == 1
    assert count(small) > 1
    assert small == traced.compile(data_parallel=True,
                                   bucket_bytes=1048).report()
    with pytest.raises(zcc.Error, match="option 'bucket-bytes' must be >= 0, "
                                        "got -1"):
        traced.compile(data_parallel=True, bucket_bytes=-1)
    with pytest.raises(zcc.Error, match="option 'bucket-bytes': '1 MiBs' is "
                                        "not a byte count"):
        traced.compile(data_parallel=True, bucket_bytes="1 MiBs")
    with pytest.raises(zcc.Error, match="unknown compile option 'bucket_mb'; "
                                        "did you mean 'bucket_bytes'"):
        traced.compile(data_parallel=True, bucket_mb=0.05)


def test_session_options_are_checked():
    compiled = trace_mlp().compile()
    with pytest.raises(zcc.Error, match="device must be 'cpu', 'cuda' or 'emulator', got 'tpu'"):
        compiled.session(device="tpu")
    with pytest.raises(zcc.Error, match="mode must be"):
        compiled.session(mode="fast")
    with pytest.raises(zcc.Error, match="precision must be"):
        compiled.session(precision="bf16")
    with pytest.raises(zcc.Error, match="microbatches > 1 needs"):
        compiled.session(microbatches=2)
    with pytest.raises(zcc.Error, match="device_ordinal must be a device "
                                        "number >= 0, got -1"):
        compiled.session(device="cuda", device_ordinal=-1)
    # The emulator runs the device kernels on the host: the same losses.
    images, labels = mixture(0)
    assert compiled.session(device="emulator").step(images, labels) == \
        pytest.approx(compiled.session().step(images, labels), rel=1e-5)


def chain_loss(x, labels):
    """32 square products of 512 (the lit tests' matmul chain): under ZeRO-1
    on 2 ranks the planner must search to reach its lower bound."""
    h = x
    for i in range(32):
        h = h @ zcc.param(f"w{i}", (512, 512),
                          init=zcc.init.uniform(-0.01, 0.01))
    return zcc.ops.cross_entropy(h, labels)


def test_planner_limits_and_compile_warnings(tmp_path):
    import warnings

    traced = zcc.trace(chain_loss, x=zcc.input((2, 512)),
                       labels=zcc.label((2,), "int32"))
    zero1 = dict(data_parallel=True, shard_optimizer_state=True, world_size=2)
    # Within the node limit: no warning, and the same plan under any time
    # limit (the nodes decide it).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = traced.compile(planner_node_limit=1000, planner_time_limit=1000,
                           **zero1)
        b = traced.compile(planner_node_limit=1000, planner_time_limit=100,
                           **zero1)
    a.save(tmp_path / "a.zplan")
    b.save(tmp_path / "b.zplan")
    assert (tmp_path / "a.zplan").read_bytes() == \
        (tmp_path / "b.zplan").read_bytes()
    # The clock ends the search first: a CompileWarning naming the entry,
    # attributed to the line that compiled, and still a plan.
    with pytest.warns(zcc.CompileWarning,
                      match=r"memory planning of 'chain_loss' stopped at its "
                            r"time limit \(1e-06 s\) before its node limit "
                            r"\(2000000 nodes\)") as caught:
        clocked = traced.compile(planner_time_limit=1e-6, **zero1)  # clocked
    assert caught[0].filename == __file__
    assert caught[0].lineno == line_of("# clocked")
    assert clocked.memory_analysis()["arena"] > 0
    with pytest.raises(zcc.Error, match="option 'planner-time-limit' must be "
                                        "> 0, got 0"):
        traced.compile(planner_time_limit=0)
    with pytest.raises(zcc.Error, match="option 'planner-node-limit' must be "
                                        ">= 0, got -1"):
        traced.compile(planner_node_limit=-1)
    with pytest.raises(zcc.Error, match="option 'planner_node_limit' must be "
                                        "a whole number, got 2.5"):
        traced.compile(planner_node_limit=2.5)


def test_compile_mlir_takes_zccs_options_and_makes_its_plan(tmp_path, examples):
    # zt text from Python with zcc's flags (data parallel, ZeRO-1, buckets,
    # the planner's budget): the plan zcc writes, byte for byte.
    import subprocess

    from test_memory_timeline import tools_dir

    path = os.path.join(examples, "gpt_block.mlir")
    text = open(path).read()
    for extra, flags in [
        (dict(), []),
        (dict(shard_optimizer_state=True, world_size=2),
         ["--shard-optimizer-state", "--world-size", "2"]),
        (dict(clip_grad_norm=0.5), ["--clip-grad-norm", "0.5"]),
        (dict(lr_schedule=zcc.lr_schedule(warmup_steps=10, decay="cosine",
                                          decay_steps=100, min_lr=1e-4)),
         ["--lr-warmup-steps", "10", "--lr-decay", "cosine",
          "--lr-decay-steps", "100", "--min-lr", "0.0001"]),
        (dict(optimizer=zcc.adamw(lr=1e-3, weight_decay=0.1, decay_min_rank=2,
                                  no_decay=["wpe", "h?.w_o"]),
              shard_optimizer_state=True, world_size=2),
         ["--weight-decay", "0.1", "--weight-decay-min-rank", "2",
          "--no-weight-decay", "wpe,h?.w_o", "--shard-optimizer-state",
          "--world-size", "2"]),
    ]:
        extra = {"optimizer": zcc.adamw(lr=1e-3, weight_decay=0.0), **extra}
        written = zcc.compile_mlir(
            text, name=path, data_parallel=True, bucket_bytes="0.05MiB",
            planner_node_limit=100000, **extra)
        out = tmp_path / "zcc.zplan"
        subprocess.run([os.path.join(tools_dir(), "zcc"), path, "-o", str(out),
                        "--optimizer", "adamw", "--lr", "0.001",
                        "--data-parallel", "--bucket-bytes", "0.05MiB",
                        "--planner-node-limit", "100000", *flags], check=True)
        assert written.plan.to_bytes() == out.read_bytes(), flags
    with pytest.raises(zcc.Error, match="for data-parallel jobs"):
        zcc.compile_mlir(text, shard_optimizer_state=True, world_size=2)
    with pytest.raises(zcc.Error, match="option 'clip-grad-norm' must be >= 0, "
                                        "got -1"):
        zcc.compile_mlir(text, clip_grad_norm=-1)
    with pytest.raises(zcc.Error, match="'bias' matches no parameter"):
        zcc.compile_mlir(text, optimizer=zcc.adamw(weight_decay=0.1,
                                                   no_decay="bias"))
    with pytest.raises(zcc.Error, match="decay_min_rank must be a whole"):
        zcc.adamw(decay_min_rank=-1)
    with pytest.raises(zcc.Error, match="no_decay must be parameter names"):
        zcc.sgd(lr=0.1, no_decay=[3])
    with pytest.raises(zcc.Error, match="decay must be None, 'cosine' or"):
        zcc.lr_schedule(decay="exponential")
    with pytest.raises(zcc.Error, match="warmup_steps must be a whole number"):
        zcc.lr_schedule(warmup_steps=2.5)
    with pytest.raises(zcc.Error, match="lr_schedule must be zcc.lr_schedule"):
        zcc.compile_mlir(text, lr_schedule=100)
    with pytest.raises(zcc.Error,
                       match=r"option 'min-lr' must be <= lr \(0.001\), got 0.1"):
        zcc.compile_mlir(text, optimizer=zcc.adamw(lr=1e-3),
                         lr_schedule=zcc.lr_schedule(decay="linear",
                                                     decay_steps=10,
                                                     min_lr=0.1))
    with pytest.warns(zcc.CompileWarning, match="stopped at its time limit"):
        zcc.compile_mlir(open(os.path.join(examples, "mlp.mlir")).read(),
                         data_parallel=True, shard_optimizer_state=True,
                         world_size=2, planner_time_limit=1e-9)


def test_a_parameter_the_loss_ignores_warns():
    def loss(x, labels):
        zcc.param("unused", (3,))
        w = zcc.param("w", (4, 2), init=zcc.init.uniform(-0.1, 0.1))
        return zcc.ops.cross_entropy(x @ w, labels)

    traced = zcc.trace(loss, x=zcc.input((2, 4)),
                       labels=zcc.label((2,), "int32"))
    with pytest.warns(zcc.CompileWarning,
                      match="parameter 'unused' does not affect the loss; "
                            "its gradient is zero"):
        traced.compile()


def test_element_rows_are_ops_with_their_params():
    """zcc.ops has a function per element row (ElementKernels.h), taking the
    row's params by position or name at PyTorch's defaults."""
    def f(x):
        w = zcc.param("w", (4,), init=zcc.init.ones())
        y = zcc.ops.leaky_relu(x * w, 0.25) + zcc.ops.clamp(x, max=0.5)
        y = y + zcc.ops.elu(x, alpha=0.5) + zcc.ops.maximum(x, 0.0)
        y = y + abs(x) + (abs(x) + 1.0) ** 1.5 + zcc.ops.softplus(x)
        return zcc.ops.sum(y)

    traced = zcc.trace(f, x=zcc.input((4,)))
    text = traced.ir()
    assert "zt.leaky_relu" in text and "negative_slope = 2.500000e-01" in text
    assert "zt.elu" in text and "alpha = 5.000000e-01" in text
    for op in ("zt.clamp", "zt.maximum", "zt.abs", "zt.pow", "zt.softplus"):
        assert op in text, op
    x = np.array([-2.0, -0.5, 0.25, 3.0], np.float32)
    loss = traced.compile(optimizer=zcc.sgd(lr=0.0)).session().step(x)
    xd = x.astype(np.float64)
    expected = (np.where(xd > 0, xd, 0.25 * xd) + np.minimum(xd, 0.5)
                + np.where(xd > 0, xd, 0.5 * np.expm1(xd)) + np.maximum(xd, 0)
                + np.abs(xd) + (np.abs(xd) + 1) ** 1.5 + np.log1p(np.exp(xd)))
    assert loss == pytest.approx(expected.sum(), rel=1e-6)
    assert "negative_slope=0.01" in zcc.ops.leaky_relu.__doc__


def test_element_row_params_are_checked():
    def too_many(x):
        return zcc.ops.sum(zcc.ops.leaky_relu(x, 0.1, 0.2))  # TOO-MANY

    with pytest.raises(zcc.Error) as info:
        zcc.trace(too_many, x=zcc.input((3,)))
    assert "leaky_relu: takes 1 numbers after its tensors (negative_slope), got 2" \
        in str(info.value)

    def unknown(x):
        return zcc.ops.sum(zcc.ops.elu(x, beta=1.0))

    with pytest.raises(zcc.Error) as info:
        zcc.trace(unknown, x=zcc.input((3,)))
    assert "elu: unknown argument 'beta' (takes alpha)" in str(info.value)


def test_ops_built_by_name_take_keywords_and_name_their_errors():
    """zcc.ops has a function per op its kernel's rule infers (cumsum):
    operands by position, parameters by keyword, checked by that rule."""
    def f(x):
        x = x * zcc.param("w", (3,), init=zcc.init.ones())
        forward = zcc.ops.cumsum(x, dim=1)
        backward = zcc.ops.op("cumsum", x, dim=-1, reverse=True)
        return zcc.ops.sum(forward * 2.0 + backward)

    traced = zcc.trace(f, x=zcc.input((2, 3)))
    assert "zt.cumsum" in traced.ir() and "reverse" in traced.ir()
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.0
    loss = traced.compile(optimizer=zcc.sgd(lr=0.0)).session().step(x)
    xd = x.astype(np.float64)
    expected = (2 * np.cumsum(xd, 1) + np.cumsum(xd[:, ::-1], 1)[:, ::-1]).sum()
    assert loss == pytest.approx(expected, rel=1e-6)
    assert "dim: int" in zcc.ops.cumsum.__doc__

    for call, message in [
            (lambda x: zcc.ops.cumsum(x), "cumsum: missing parameter 'dim'"),
            (lambda x: zcc.ops.cumsum(x, dim=1.5),
             "cumsum: parameter 'dim' must be an int, got 1.5"),
            (lambda x: zcc.ops.cumsum(x, dim=0, reversed=True),
             "cumsum: no parameter 'reversed' (it takes dim, reverse)"),
            (lambda x: zcc.ops.cumsum(x, dim=2),
             "cumsum: dim 2 is out of range for rank 2"),
            (lambda x: zcc.ops.op("matmul", x, x),
             "no op 'matmul' is built by name")]:
        with pytest.raises(zcc.Error, match=re.escape(message)):
            zcc.trace(lambda x: zcc.ops.sum(call(x)), x=zcc.input((2, 3)))


def test_comparisons_make_masks_that_where_takes():
    def f(x, t):
        w = zcc.param("w", (4,), init=zcc.init.constant(2.0))
        mask = zcc.ops.logical_and(zcc.ops.gt(x, -1.0), zcc.ops.lt(x, 1.0))
        assert mask.dtype == "bool"
        y = zcc.ops.where(mask, x * w, 0.0) + zcc.ops.where(zcc.ops.eq(x, t), 1.0, x)
        return zcc.ops.sum(y)

    traced = zcc.trace(f, x=zcc.input((4,)), t=zcc.label((4,), "float32"))
    x = np.array([-2.0, -0.5, 0.5, 3.0], np.float32)
    t = np.array([-2.0, 0.0, 0.5, 1.0], np.float32)
    loss = traced.compile(optimizer=zcc.sgd(lr=0.0)).session().step(x, t)
    xd = x.astype(np.float64)
    expected = (np.where((xd > -1) & (xd < 1), 2 * xd, 0)
                + np.where(xd == t, 1.0, xd))
    assert loss == pytest.approx(expected.sum(), rel=1e-6)


def test_a_mask_cannot_be_added_or_be_an_input():
    def adds(x):
        return zcc.ops.sum(zcc.ops.gt(x, 0.0) + x)  # MASK-ADD

    with pytest.raises(zcc.Error) as info:
        zcc.trace(adds, x=zcc.input((3,)))
    assert str(info.value).startswith(here("# MASK-ADD")), str(info.value)
    assert "zt.add" in str(info.value)
    with pytest.raises(zcc.Error) as info:
        zcc.trace(lambda m: zcc.ops.sum(m), m=zcc.input((3,), "bool"))
    assert "bool arguments are not supported" in str(info.value)


def running_mean_step(x, y):
    w = zcc.param("w", (8, 4), init=zcc.init.normal(0.0, 0.5))
    mean = zcc.state("h.running_mean", (4,))
    count = zcc.state("h.count", ())
    h = x @ w
    zcc.update(mean, mean * 0.9 + h.mean(0) * 0.1)
    zcc.update(count, count + 1)
    return zcc.ops.mse(h, y)


def test_state_is_written_by_every_step_in_place():
    traced = zcc.trace(running_mean_step, x=zcc.input((16, 8)),
                       y=zcc.input((16, 4)))
    assert traced.state == ["h.running_mean", "h.count"]
    assert traced.parameters == ["w"]
    rng = np.random.default_rng(0)
    batches = [(rng.normal(size=(16, 8)).astype(np.float32),
                rng.normal(size=(16, 4)).astype(np.float32)) for _ in range(3)]
    compiled = traced.compile(optimizer=zcc.sgd(lr=0.0))  # w stays put
    runs = []
    for mode in ("planned", "no-reuse", "poison"):
        session = compiled.session(mode=mode, precision="f64")
        w = session.read("w")
        for x, y in batches:
            session.step(x, y)
        runs.append(session.read("h.running_mean").tobytes())
    assert runs[0] == runs[1] == runs[2]
    expected = np.zeros(4)
    for x, _ in batches:  # NumPy's running mean of the same steps
        expected = expected * 0.9 + (x.astype(np.float64) @ w).mean(0) * 0.1
    assert np.allclose(session.read("h.running_mean"), expected, rtol=1e-12)
    assert session.read("h.count") == 3
    assert set(session.state_dict()) == {"w", "h.running_mean", "h.count"}
    assert session.stats()["allocations_after_load"] == 0


def test_state_updates_are_checked():
    def updates_a_parameter(x):
        w = zcc.param("w", (4,))
        zcc.update(w, w * 2)
        return (x * w).sum()

    def updates_twice(x):
        s = zcc.state("s", (4,))
        zcc.update(s, s + 1)
        zcc.update(s, s + 2)
        return (x * s).sum()

    with pytest.raises(zcc.Error, match="update: operand #0 is not a state"):
        zcc.trace(updates_a_parameter, x=zcc.input((4,)))
    with pytest.raises(zcc.Error, match="state 's' is already updated"):
        zcc.trace(updates_twice, x=zcc.input((4,)))


def test_numbers_stay_exact_in_f64():
    """A number f32 cannot hold (0.1, 1e-3) is a parameter of the op, not an
    f32 constant: the f64 reference computes with the number itself."""
    def step(x):
        w = zcc.param("w", (4,), init=zcc.init.ones())
        h = x * w
        return (0.1 / (h + 3.0) + (h - 1e-3) * 0.1).sum()

    x = np.array([0.5, 1.0, 2.0, 4.0], np.float32)
    session = zcc.trace(step, x=zcc.input((4,))).compile(
        optimizer=None).session(precision="f64")
    loss = session.step(x)
    h = x.astype(np.float64)
    assert abs(loss - (0.1 / (h + 3.0) + (h - 1e-3) * 0.1).sum()) <= 1e-15
    grad = -0.1 / (h + 3.0) ** 2 * h + 0.1 * h
    assert np.allclose(session.read("w.grad"), grad, rtol=1e-14, atol=0)
