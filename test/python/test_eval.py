"""Eval and predict entries: a traced step with its evaluation (Traced.add_eval,
add_predict), a PyTorch module's (zcc.from_torch), and zrun --eval-data.
Every value is checked against NumPy or PyTorch computing the same thing
from the session's own parameters."""

import os
import subprocess

import numpy as np
import pytest

import zcc

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 4)).astype(np.float32)
Y = RNG.integers(0, 3, size=8).astype(np.int32)


def scores(x, dropout):
    w = zcc.param("w", (4, 3), init=zcc.init.normal(0.0, 0.5))
    b = zcc.param("b", (3,))
    return zcc.ops.dropout(x, dropout) @ w + b


def traced_with_entries(predict_form="one"):
    def loss_fn(x, y):
        return zcc.ops.cross_entropy(scores(x, 0.5), y)

    def eval_fn(x, y):  # the same model, dropout off
        return zcc.ops.cross_entropy(scores(x, 0.0), y)

    def predict_fn(x):
        s = scores(x, 0.0)
        return {"one": s, "tuple": (s, s * 2.0),
                "dict": {"scores": s, "doubled": s * 2.0}}[predict_form]

    traced = zcc.trace(loss_fn, x=zcc.input((8, 4)), y=zcc.label((8,)))
    return traced.add_eval(eval_fn).add_predict(predict_fn)


def numpy_loss(session, x, y):
    s = x.astype(np.float64) @ session.read("w") + session.read("b")
    s -= s.max(axis=1, keepdims=True)
    logp = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(y)), y].mean()


def test_eval_and_predict_read_the_trained_parameters_and_change_nothing():
    session = traced_with_entries().compile(
        optimizer=zcc.sgd(lr=0.1)).session(precision="f64")
    for _ in range(3):
        session.step(X, Y)
    before = {n: a.copy() for n, a in session.state_dict().items()}
    count = session.step_count
    loss = session.eval(X, Y)
    assert loss == pytest.approx(numpy_loss(session, X, Y), rel=1e-12)
    predicted = session.predict(X)
    assert predicted.shape == (8, 3)
    np.testing.assert_allclose(
        predicted, X @ session.read("w") + session.read("b"), rtol=1e-12)
    # Evaluating leaves training exactly where it was.
    for name, value in session.state_dict().items():
        assert value.tobytes() == before[name].tobytes(), name
    assert session.step_count == count
    stats = session.stats()
    assert stats["runs_by_kind"]["eval"] == 1
    assert stats["runs_by_kind"]["predict"] == 1
    assert stats["allocations_after_load"] == 0
    # The next step is the one that would have come without evaluating.
    other = traced_with_entries().compile(
        optimizer=zcc.sgd(lr=0.1)).session(precision="f64")
    for _ in range(4):
        expected = other.step(X, Y)
    assert session.step(X, Y) == expected


def test_the_device_executor_evaluates_as_the_cpu_does():
    # The CUDA executor's program, on the host (the emulator): the eval and
    # predict entries lower and run like the step's.
    compiled = traced_with_entries().compile(optimizer=zcc.sgd(lr=0.1))
    cpu, device = compiled.session(), compiled.session(device="emulator")
    for session in (cpu, device):
        session.step(X, Y)
    assert device.eval(X, Y) == pytest.approx(cpu.eval(X, Y), rel=1e-5)
    np.testing.assert_allclose(device.predict(X), cpu.predict(X), rtol=1e-5,
                               atol=1e-6)
    assert device.stats()["runs_by_kind"]["eval"] == 1


def test_mixed_precision_covers_the_evaluation():
    traced = traced_with_entries()
    f32 = traced.compile().session()
    compiled = traced.compile(precision="bf16")
    ir = compiled.planned_ir()
    evaluation = ir[ir.index("kind = eval"):ir.index("kind = predict")]
    assert "bf16" in evaluation
    assert compiled.session().eval(X, Y) == pytest.approx(f32.eval(X, Y),
                                                          rel=2e-2)


@pytest.mark.parametrize("form", ["tuple", "dict"])
def test_predictions_come_back_in_the_form_returned(form):
    session = traced_with_entries(form).compile().session()
    out = session.predict(x=X)
    if form == "tuple":
        assert isinstance(out, tuple) and len(out) == 2
        np.testing.assert_allclose(out[1], 2 * out[0], rtol=1e-6)
    else:
        assert sorted(out) == ["doubled", "scores"]
        np.testing.assert_allclose(out["doubled"], 2 * out["scores"],
                                   rtol=1e-6)


def test_a_saved_plan_keeps_its_entries(tmp_path):
    compiled = traced_with_entries().compile()
    compiled.save(tmp_path / "m.zplan")
    loaded = zcc.load_plan(tmp_path / "m.zplan").session()
    ours = compiled.session()
    assert loaded.eval(X, Y) == ours.eval(X, Y)
    out = loaded.predict(x=X)  # by name, with no traced form: a dict
    np.testing.assert_array_equal(out["output"], ours.predict(X))


def test_errors_name_the_problem():
    traced = traced_with_entries()
    with pytest.raises(zcc.Error, match="already has an eval entry"):
        traced.add_eval(lambda x, y: zcc.ops.cross_entropy(scores(x, 0), y))
    plain = zcc.trace(lambda x, y: zcc.ops.cross_entropy(scores(x, 0.0), y),
                      x=zcc.input((8, 4)), y=zcc.label((8,)))
    with pytest.raises(zcc.Error, match="is a label; a predict function "
                                        "takes inputs only"):
        plain.add_predict(lambda x, y: scores(x, 0.0), x=zcc.input((8, 4)),
                          y=zcc.label((8,)))
    with pytest.raises(zcc.Error, match="argument 'z' of .* is not an input "
                                        "of the step"):
        plain.add_predict(lambda z: scores(z, 0.0))
    with pytest.raises(zcc.Error, match="must return its predictions"):
        plain.add_predict(lambda x: 3)
    session = plain.compile().session()
    with pytest.raises(zcc.Error, match="the plan has no eval entry"):
        session.eval(X, Y)
    session = traced_with_entries().compile().session()
    with pytest.raises(zcc.Error, match="eval: input 'x' expects shape "
                                        r"\(8, 4\) float32, got \(2, 4\)"):
        session.eval(X[:2], Y)
    with pytest.raises(zcc.Error, match="'y' is not an input of this plan's "
                                        "predict entry"):
        session.predict(x=X, y=Y)
    # A parameter the evaluation declares differently from the step.
    bad = zcc.trace(lambda x, y: zcc.ops.cross_entropy(scores(x, 0.0), y),
                    x=zcc.input((8, 4)), y=zcc.label((8,)))
    bad.add_eval(lambda x, y: zcc.ops.cross_entropy(
        x @ zcc.param("w", (4, 3), init=zcc.init.zeros()), y))
    with pytest.raises(zcc.Error, match="differs in type or initializer"):
        bad.compile()


torch = pytest.importorskip("torch")


class Net(torch.nn.Module):
    """BatchNorm's running statistics and dropout: what eval mode changes."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 16)
        self.bn = torch.nn.BatchNorm1d(16)
        self.drop = torch.nn.Dropout(0.5)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.bn(self.fc1(x)))))


def test_from_torch_evaluates_like_model_eval():
    import copy
    torch.manual_seed(0)
    module = Net()
    module.train()
    loss = torch.nn.functional.cross_entropy
    x, y = torch.tensor(X), torch.tensor(Y).long()
    traced = zcc.from_torch(module, x, y, loss=loss)
    assert module.training and module.bn.training  # modes left as they were
    session = traced.compile(optimizer=zcc.sgd(lr=0.1)).session(
        precision="f64")
    labels = Y.astype(np.int64)
    for _ in range(3):
        session.step(X, labels)
    # PyTorch's eval of zcc's trained weights and running statistics, in
    # f64.
    reference = copy.deepcopy(module).double()
    parameters = dict(reference.named_parameters())
    with torch.no_grad():
        for name, value in session.state_dict().items():
            target = parameters[name] if name in parameters else \
                reference.get_buffer(name)
            target.copy_(torch.tensor(value))
    assert reference.bn.running_mean.abs().sum() > 0  # trained statistics
    reference.eval()
    with torch.no_grad():
        theirs = reference(x.double())
        theirs_loss = loss(theirs, y).item()
    assert session.eval(X, labels) == pytest.approx(theirs_loss, rel=1e-12)
    out = session.predict(X)
    assert list(out) == ["output"]
    np.testing.assert_allclose(out["output"], theirs.numpy(), rtol=1e-10,
                               atol=1e-12)
    # Training's dropout is on: its loss differs from evaluation's.
    assert session.step(X, labels) != pytest.approx(
        session.eval(X, labels), rel=1e-6)


def tools_dir():
    from test_memory_timeline import tools_dir as find
    return find()


def test_zrun_evaluates_every_n_steps_like_the_session(tmp_path):
    compiled = traced_with_entries().compile(optimizer=zcc.sgd(lr=0.1))
    compiled.save(tmp_path / "m.zplan")
    np.savez(tmp_path / "train.npz", x=X, y=Y)
    held_x = RNG.standard_normal((16, 4)).astype(np.float32)
    held_y = RNG.integers(0, 3, size=16).astype(np.int32)
    np.savez(tmp_path / "eval.npz", x=held_x, y=held_y)
    run = subprocess.run(
        [os.path.join(tools_dir(), "zrun"), str(tmp_path / "m.zplan"),
         "--steps", "4", "--data", str(tmp_path / "train.npz"),
         "--eval-data", str(tmp_path / "eval.npz"), "--eval-every", "2"],
        capture_output=True, text=True, check=True)
    lines = [l for l in run.stdout.splitlines() if l.startswith("eval after")]
    session = compiled.session()
    expected = []
    for step in range(1, 5):
        session.step(X, Y)
        if step % 2 == 0:  # the file's two batches of 8, averaged
            expected.append((session.eval(held_x[:8], held_y[:8]) +
                             session.eval(held_x[8:], held_y[8:])) / 2)
    assert "2 batches per evaluation" in run.stdout, run.stdout
    assert [float(l.split()[-1]) for l in lines] == pytest.approx(
        expected, abs=2e-6), run.stdout
    assert [l.split()[2] for l in lines] == ["step", "step"]
    assert [int(l.split()[3]) for l in lines] == [2, 4]
    bad = subprocess.run([os.path.join(tools_dir(), "zrun"),
                          str(tmp_path / "m.zplan"), "--eval-every", "2"],
                         capture_output=True, text=True)
    assert bad.returncode == 2
    assert "--eval-every and --eval-batches need --eval-data" in bad.stderr
