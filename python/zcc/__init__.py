"""zcc: training steps compiled ahead of time into a static memory plan.

Trace a loss function, compile it (autodiff, optimizer, liveness, memory
plan), and train it in a session that allocates nothing after load::

    import numpy as np, zcc

    def loss_fn(x, y):
        w = zcc.param("w", (784, 10), init=zcc.init.normal(0.0, 0.02))
        b = zcc.param("b", (10,))
        return zcc.ops.cross_entropy(x @ w + b, y)

    traced = zcc.trace(loss_fn, x=zcc.input((32, 784)), y=zcc.label((32,)))
    compiled = traced.compile(optimizer=zcc.adamw(lr=1e-3))
    session = compiled.session()
    loss = session.step(x=np.zeros((32, 784), np.float32),
                        y=np.zeros((32,), np.int32))

See docs/python.md.
"""

from ._zcc import Error, OutOfMemoryError
from . import data, init, ops
from ._torch_import import from_torch
from ._trace import (
    Compiled,
    CompileWarning,
    Session,
    Tensor,
    Traced,
    adamw,
    compile_mlir,
    compile_options,
    input,
    label,
    load_plan,
    lr_schedule,
    param,
    scope,
    sgd,
    state,
    trace,
    update,
)

__all__ = [
    "Compiled",
    "CompileWarning",
    "Error",
    "OutOfMemoryError",
    "Session",
    "Tensor",
    "Traced",
    "adamw",
    "compile_mlir",
    "compile_options",
    "from_torch",
    "init",
    "input",
    "label",
    "load_plan",
    "lr_schedule",
    "ops",
    "param",
    "scope",
    "sgd",
    "state",
    "trace",
    "update",
]
