"""Session.checked_step names the op that first wrote a NaN, with its phase
and the traced function's line, and its inputs' ranges."""
import numpy as np

import zcc


def normalized(x, labels):
    w = zcc.param("w", (8, 3), init=zcc.init.normal(std=0.1))
    total = zcc.ops.sum(x, dim=1, keepdim=True)
    shares = x / total  # DIVIDES
    return zcc.ops.cross_entropy(shares @ w, labels)


def line_of(marker):
    with open(__file__) as f:
        for number, line in enumerate(f, 1):
            if marker in line and "line_of" not in line:
                return number
    raise AssertionError(marker)


def test_checked_step_names_the_division_and_its_line():
    traced = zcc.trace(normalized, x=zcc.input((4, 8)),
                       labels=zcc.label((4,), "int32"))
    session = traced.compile(optimizer=zcc.adamw(lr=1e-2)).session()
    x = np.random.default_rng(0).uniform(0.5, 1.5, (4, 8)).astype(np.float32)
    labels = np.array([0, 1, 2, 0], dtype=np.int32)
    loss, report = session.checked_step(x, labels)
    assert np.isfinite(loss) and report is None
    # The same step as step() gives: checking changes no value.
    twin = traced.compile(optimizer=zcc.adamw(lr=1e-2)).session()
    assert twin.step(x, labels) == loss
    x[2] = 0
    loss, report = session.checked_step(x, labels)
    assert np.isnan(loss)
    first = report.splitlines()[0]
    assert first.startswith("the first NaN is written by div "), report
    assert ", forward) at " in first, report
    assert first.endswith("%s:%d:" % (__file__, line_of("# DIVIDES"))), report
    assert "input  'x' 4x8xf32 in [0, " in report, report
    assert "8 zero of 32" in report, report
