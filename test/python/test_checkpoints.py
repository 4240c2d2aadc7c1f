"""A run's checkpoints from Python (Session.checkpoint / Session.resume):
a run stopped anywhere and resumed in a new session continues with the
uninterrupted run's bits; a corrupt newest checkpoint is passed over with
a warning; another run's checkpoint is refused."""
import os
import warnings

import numpy as np
import pytest

import zcc

ROWS, WIDTH, CLASSES = 16, 32, 5


def model(x, labels):
    w1 = zcc.param("w1", (WIDTH, 64), init=zcc.init.normal(std=0.1))
    w2 = zcc.param("w2", (64, CLASSES), init=zcc.init.normal(std=0.1))
    h = zcc.ops.dropout(zcc.ops.gelu(x @ w1), p=0.2)
    return zcc.ops.cross_entropy(h @ w2, labels)


def compiled():
    traced = zcc.trace(model, x=zcc.input((ROWS, WIDTH)),
                       labels=zcc.label((ROWS,), "int32"))
    return traced.compile(optimizer=zcc.adamw(lr=3e-3),
                          lr_schedule=zcc.lr_schedule(warmup_steps=2,
                                                      decay="cosine",
                                                      decay_steps=20),
                          accumulate=True)


def batch(number):
    """Batch `number` of the data: a function of its number alone."""
    rng = np.random.default_rng(number)
    labels = rng.integers(0, CLASSES, size=ROWS).astype(np.int32)
    x = (rng.normal(size=(ROWS, WIDTH)) + labels[:, None]).astype(np.float32)
    return x, labels


def step(session):
    """The session's next step, on the batches its steps so far point to."""
    first = session.steps_done * 2
    pair = [batch(first), batch(first + 1)]
    return session.step(np.stack([p[0] for p in pair]),
                        np.stack([p[1] for p in pair]))


def test_resumed_runs_are_the_uninterrupted_run(tmp_path):
    plan = compiled()
    whole = plan.session(microbatches=2)
    reference = [step(whole) for _ in range(12)]
    # Stopped after 5 and after 9 steps (checkpoints every 2: the 4th and
    # the 8th are the newest), each time resumed in a new session.
    losses = {}
    for stop in (5, 9, 12):
        session = plan.session(microbatches=2)
        done = session.resume(tmp_path)
        assert done == {5: 0, 9: 4, 12: 8}[stop]
        while session.steps_done < stop:
            loss = step(session)
            losses[session.steps_done] = loss
            if session.steps_done % 2 == 0:
                session.checkpoint(tmp_path, keep=2)
    assert [losses[k] for k in range(1, 13)] == reference
    assert np.array_equal(session.read("w1"), whole.read("w1"))
    assert sorted(os.listdir(tmp_path)) == [
        "manifest.json", "step-000000010.safetensors",
        "step-000000012.safetensors"]


def test_a_corrupt_newest_checkpoint_is_passed_over(tmp_path):
    plan = compiled()
    session = plan.session(microbatches=2)
    for _ in range(4):
        step(session)
        session.checkpoint(tmp_path)
    newest = tmp_path / "step-000000004.safetensors"
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 1
    newest.write_bytes(bytes(data))
    fresh = plan.session(microbatches=2)
    with pytest.warns(UserWarning, match=r"step-000000004.safetensors "
                      r"\(corrupt: CRC-32 [0-9a-f]+, the manifest says"):
        assert fresh.resume(tmp_path) == 3


def test_another_runs_checkpoint_is_refused(tmp_path):
    plan = compiled()
    session = plan.session(microbatches=2, seed=1)
    step(session)
    session.checkpoint(tmp_path)
    with pytest.raises(zcc.Error, match="the run was seeded 1, this one 2"):
        plan.session(microbatches=2, seed=2).resume(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert plan.session(microbatches=2, seed=1).resume(
            tmp_path / "new") == 0


def stacked(step_number):
    """Step `step_number`'s two microbatches, stacked (as step() takes)."""
    pair = [batch(2 * step_number), batch(2 * step_number + 1)]
    return (np.stack([p[0] for p in pair]), np.stack([p[1] for p in pair]))


def test_fit_trains_as_steps_and_resumes_where_a_signal_stopped_it(tmp_path):
    plan = compiled()
    whole = plan.session(microbatches=2)
    reference = [step(whole) for _ in range(10)]
    # Session.fit: zrun's loop over the caller's batches, the same bits.
    losses = {}
    fitted = plan.session(microbatches=2)
    result = fitted.fit(stacked, 10,
                        report=lambda k, loss, metrics: losses.update({k: loss}))
    assert result["steps_run"] == 10 and result["stopped_by"] == 0
    assert [losses[k] for k in range(1, 11)] == reference
    assert np.array_equal(fitted.read("w1"), whole.read("w1"))

    # SIGTERM during step 4 (while its batch is read): the run stops after
    # it, with a checkpoint; a new session's fit goes on from step 5.
    import signal

    def term_in_4(k):
        if k == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return stacked(k)
    losses.clear()
    first = plan.session(microbatches=2)
    result = first.fit(term_in_4, 10, checkpoint_dir=tmp_path,
                       checkpoint_every=3,
                       report=lambda k, loss, m: losses.update({k: loss}))
    assert result["stopped_by"] == signal.SIGTERM and result["steps_run"] == 4
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # restored
    second = plan.session(microbatches=2)
    result = second.fit(stacked, 10, checkpoint_dir=tmp_path,
                        checkpoint_every=3,
                        report=lambda k, loss, m: losses.update({k: loss}))
    assert result["first_step"] == 5 and result["steps_run"] == 10
    assert [losses[k] for k in range(1, 11)] == reference
    assert np.array_equal(second.read("w1"), whole.read("w1"))


def test_fit_names_a_nonfinite_step_and_raises_the_batches_errors(tmp_path):
    plan = compiled()

    def poisoned(k):
        x, labels = stacked(k)
        if k == 2:  # step 3
            x = x.copy()
            x[0, 0, 0] = np.nan
        return x, labels
    session = plan.session(microbatches=2)
    with pytest.warns(UserWarning, match=r"(?s)the loss is NaN at step 3: "
                      r"skipped .*the first NaN is written by matmul"):
        result = session.fit(poisoned, 5, checkpoint_dir=tmp_path,
                             on_nonfinite="skip-step")
    assert result["steps_skipped"] == 1 and result["steps_run"] == 5
    stopped = plan.session(microbatches=2)
    with pytest.raises(zcc.Error, match="step 3"):
        stopped.fit(poisoned, 5, checkpoint_dir=tmp_path / "stop")

    def broken(k):
        if k == 3:
            raise KeyError("no batch 3")
        return stacked(k)
    session = plan.session(microbatches=2)
    with pytest.raises(KeyError, match="no batch 3"):
        session.fit(broken, 6)
    assert session.steps_done == 3  # step 4's update never ran
    with pytest.raises(zcc.Error, match="expects shape"):
        plan.session(microbatches=2).fit(lambda k: batch(k), 2)
