"""Tracing (trace, input, label, param, Tensor), compiling and sessions."""

import contextlib
import json
import math
import numbers
import os
import re
import sys
import threading
import warnings

import numpy as np

from . import _zcc
from ._zcc import Error

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class CompileWarning(UserWarning):
    """A compile that succeeded with something to say: a parameter that does
    not affect the loss, or a memory plan the planner's time limit ended
    (which may then differ on another machine)."""


def _warn(text):
    """The compiler's warnings ("file:line:col: warning: ..." lines, notes
    indented under them), one CompileWarning each, attributed to the caller
    of compile."""
    found = []
    for line in text.splitlines():
        if line.startswith(" ") and found:
            found[-1] += "\n" + line
        elif line.strip():
            found.append(line)
    # The first frame outside this package: compile's caller, however
    # many of the package's own calls lie between (compile(fit=...)'s).
    package = os.path.dirname(os.path.abspath(__file__))
    level, frame = 2, sys._getframe(1)  # 1 is this function
    while frame is not None and \
            os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == package:
        level, frame = level + 1, frame.f_back
    for message in found:
        warnings.warn(message, CompileWarning, stacklevel=level)


_state = threading.local()


def _where():
    """The user's file and line: the first frame outside this package (or
    the location an importer set for the ops it emits)."""
    override = getattr(_state, "location", None)
    if override is not None:
        return override
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return ("", 0)
    return (frame.f_code.co_filename, frame.f_lineno)


@contextlib.contextmanager
def _location(file, line):
    """Ops built inside carry (file, line) instead of the caller's frame."""
    previous = getattr(_state, "location", None)
    _state.location = (file, line)
    try:
        yield
    finally:
        _state.location = previous


def _error(message):
    file, line = _where()
    prefix = f"{file}:{line}: error: " if file else "error: "
    return Error(prefix + message)


_DTYPES = {
    "float32": _zcc.DType.f32,
    "f32": _zcc.DType.f32,
    "int32": _zcc.DType.i32,
    "i32": _zcc.DType.i32,
    "int64": _zcc.DType.i64,
    "i64": _zcc.DType.i64,
    "bool": _zcc.DType.bool,
}
_NUMPY_NAMES = {
    _zcc.DType.f32: "float32",
    _zcc.DType.i32: "int32",
    _zcc.DType.i64: "int64",
    _zcc.DType.bool: "bool",
}


def _dtype(dtype):
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if name not in _DTYPES:
        raise _error(
            f"unsupported dtype {dtype!r}: zcc tensors are float32, int32 "
            "or int64"
        )
    return _DTYPES[name]


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return [int(shape)]
    return [int(d) for d in shape]


def _current():
    graph = getattr(_state, "graph", None)
    if graph is None:
        raise _error(
            "no trace is running: zcc.param and zcc.ops are used inside the "
            "function given to zcc.trace"
        )
    return graph


class Tensor:
    """A traced value: its shape and dtype are known, its values are not
    (they exist only when a compiled step runs)."""

    __slots__ = ("_t", "_trace")

    def __init__(self, handle, trace):
        self._t = handle
        self._trace = trace

    @property
    def shape(self):
        return self._t.shape

    @property
    def dtype(self):
        return _NUMPY_NAMES[self._t.dtype]

    @property
    def ndim(self):
        return len(self._t.shape)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a rank-0 zcc tensor")
        return self.shape[0]

    def __repr__(self):
        return f"zcc.Tensor(shape={self.shape}, dtype={self.dtype})"

    def _no_value(self, what):
        file, line = _where()
        where = f"{file}:{line}: error: " if file else ""
        raise TypeError(
            f"{where}{what} needs the value of a traced zcc tensor "
            f"(shape {self.shape}, {self.dtype}), and a trace has none: the "
            "step is compiled ahead of time and runs later, so Python control "
            "flow cannot depend on tensor values. Compute both branches with "
            "zcc.ops, or read values from a session after session.step()."
        )

    def __bool__(self):
        self._no_value("bool()")

    def __float__(self):
        self._no_value("float()")

    def __int__(self):
        self._no_value("int()")

    def __index__(self):
        self._no_value("using a tensor as an index")

    def __array__(self, *args, **kwargs):
        self._no_value("converting to a NumPy array")

    def __iter__(self):
        self._no_value("iterating")

    def __lt__(self, other):
        self._no_value("comparing (<)")

    def __le__(self, other):
        self._no_value("comparing (<=)")

    def __gt__(self, other):
        self._no_value("comparing (>)")

    def __ge__(self, other):
        self._no_value("comparing (>=)")

    __hash__ = object.__hash__

    def __add__(self, other):
        from . import ops
        return ops.add(self, other)

    def __radd__(self, other):
        from . import ops
        return ops.add(other, self)

    def __sub__(self, other):
        from . import ops
        return ops.sub(self, other)

    def __rsub__(self, other):
        from . import ops
        return ops.sub(other, self)

    def __mul__(self, other):
        from . import ops
        return ops.mul(self, other)

    def __rmul__(self, other):
        from . import ops
        return ops.mul(other, self)

    def __truediv__(self, other):
        from . import ops
        return ops.div(self, other)

    def __rtruediv__(self, other):
        from . import ops
        return ops.div(other, self)

    def __neg__(self):
        from . import ops
        return ops.neg(self)

    def __abs__(self):
        from . import ops
        return ops.abs(self)

    def __pow__(self, exponent):
        from . import ops
        if not isinstance(exponent, numbers.Real):
            raise _error("**: the exponent must be a number (zt.pow), got "
                         f"{type(exponent).__name__}")
        return ops.pow(self, exponent)

    def __matmul__(self, other):
        from . import ops
        return ops.matmul(self, other)

    def __rmatmul__(self, other):
        from . import ops
        return ops.matmul(other, self)

    def __getitem__(self, index):
        from . import ops
        return ops.getitem(self, index)

    def reshape(self, *shape):
        from . import ops
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        return ops.reshape(self, shape)

    view = reshape

    def transpose(self, a, b):
        from . import ops
        return ops.swapaxes(self, a, b)

    def permute(self, *dims):
        from . import ops
        if len(dims) == 1 and not isinstance(dims[0], (int, np.integer)):
            dims = tuple(dims[0])
        return ops.transpose(self, dims)

    @property
    def T(self):
        from . import ops
        return ops.transpose(self, tuple(reversed(range(self.ndim))))

    def sum(self, dim=None, keepdim=False):
        from . import ops
        return ops.sum(self, dim, keepdim)

    def mean(self, dim=None, keepdim=False):
        from . import ops
        return ops.mean(self, dim, keepdim)

    def max(self, dim=None, keepdim=False):
        from . import ops
        return ops.max(self, dim, keepdim)


class _Spec:
    def __init__(self, role, shape, dtype):
        self.role = role
        self.shape = _shape(shape)
        self.dtype = _dtype(dtype)


def input(shape, dtype="float32"):
    """A batch tensor fed every step."""
    return _Spec("input", shape, dtype)


def label(shape, dtype="int32"):
    """Targets fed every step: integer class ids (the default) or floats."""
    return _Spec("label", shape, dtype)


def _persistent(what, declare, name, shape, init, dtype):
    """A persistent argument of the running trace (a parameter or state):
    `init` is a zcc.init initializer or its initial value as an array."""
    trace = _current()
    if _dtype(dtype) != _zcc.DType.f32:
        raise _error(f"{what} '{name}': {what}s are float32, got {dtype}")
    if init is None:
        init = _zcc.Init.zeros()
    value = None
    if not isinstance(init, _zcc.Init) and hasattr(init, "__array__"):
        value = np.asarray(init)
        if tuple(value.shape) != tuple(_shape(shape)):
            raise _error(f"{what} '{name}': its initial value has shape "
                         f"{tuple(value.shape)}, the {what} {tuple(_shape(shape))}")
        init = _zcc.Init.given()
    if not isinstance(init, _zcc.Init):
        raise _error(
            f"{what} '{name}': init must be a zcc.init initializer "
            f"(zeros, ones, constant, normal, uniform), got {type(init).__name__}"
        )
    file, line = _where()
    full = trace.graph.scope_prefix + name
    handle = getattr(trace.graph, declare)(name, _shape(shape), init, file, line)
    if value is not None:
        trace.values[full] = value
    return Tensor(handle, trace)


def param(name, shape, init=None, dtype="float32"):
    """A trained weight of the running trace, named `name` inside the
    current zcc.scope(s). `init` is a zcc.init initializer (zeros by
    default) or the initial value as an array."""
    return _persistent("parameter", "parameter", name, shape, init, dtype)


def state(name, shape, init=None, dtype="float32"):
    """State the step reads and may write (zcc.update), such as
    BatchNorm's running statistics: persistent and checkpointed like a
    parameter, never trained. Named and initialized as zcc.param."""
    return _persistent("state", "state", name, shape, init, dtype)


def update(state, value):
    """The step writes `value` over `state` (a zcc.state) in place, after
    every read of the old value; no gradient flows through it. Once per
    state and step."""
    trace = _current()
    if not isinstance(state, Tensor) or not isinstance(value, Tensor):
        raise _error("update: state and value must be zcc.Tensors")
    file, line = _where()
    trace.graph.update(state._t, value._t, file, line)


@contextlib.contextmanager
def scope(name):
    """Prefixes the names of parameters created inside: "h0.w_q"."""
    trace = _current()
    handle = trace.graph.push_scope(str(name))
    try:
        yield
    finally:
        trace.graph.pop_scope(handle)


def _symbol(name):
    name = re.sub(r"[^A-Za-z0-9_]", "_", name or "step")
    return name if re.match(r"[A-Za-z_]", name) else "step_" + name


class Traced:
    """A traced training step: its zt program, ready to compile."""

    def __init__(self, graph, inputs, labels, values=None, symbol="step",
                 specs=None):
        self.graph = graph
        self._inputs = inputs
        self._labels = labels
        self._values = values or {}
        self._entries = {}  # "eval"/"predict" -> (feed order, result form)
        self._symbol = symbol  # the step function's name in the program
        self._specs = specs or {}  # argument name -> zcc.input/label spec
        self.timings = {}  # seconds by stage (from_torch fills it)

    def add_eval(self, fn, *specs, **named_specs):
        """Adds an eval entry: `fn` traced like the step (its arguments
        declared by zcc.input / zcc.label; none given: the step's own) and
        returning the loss, written as the model evaluates (dropout off,
        BatchNorm on its running statistics). It reads the step's
        parameters and state by name (same shapes and initializers) and
        writes none: Session.eval() gives a validation loss that leaves
        training exactly where it was. Returns self."""
        return self._add("eval", fn, specs, named_specs)

    def add_predict(self, fn, *specs, **named_specs):
        """Adds a predict entry: `fn` of inputs only (none given: the
        step's inputs) returning its predictions, a zcc.Tensor or a tuple
        or dict of them; Session.predict() returns them in that form.
        Returns self."""
        return self._add("predict", fn, specs, named_specs)

    def _add(self, kind, fn, specs, named_specs):
        if kind in self._entries:
            raise Error(f"add_{kind}: the step already has an {kind} entry")
        if not specs and not named_specs:
            import inspect
            wanted = list(inspect.signature(fn).parameters)
            known = self._inputs + (self._labels if kind == "eval" else [])
            named_specs = {}
            for n in wanted:
                if n not in known:
                    raise Error(
                        f"add_{kind}: argument '{n}' of "
                        f"{getattr(fn, '__name__', 'the function')} is not "
                        f"an input{' or label' if kind == 'eval' else ''} of "
                        f"the step ({', '.join(known)}); declare it with "
                        "zcc.input / zcc.label")
                named_specs[n] = self._specs[n]
        graph = _zcc.Graph(f"{self._symbol}_{kind}")
        inputs, labels, values, form, _ = _trace_into(
            graph, fn, specs, named_specs, "finish_" + kind)
        self.graph.add_entry(graph)
        for name, value in values.items():
            self._values.setdefault(name, value)
        self._entries[kind] = (inputs + labels, form)
        return self

    def ir(self, locations=False):
        """The zt program as text, the form `zcc` reads (with each op's
        file:line when `locations` is set)."""
        return self.graph.str(locations)

    @property
    def inputs(self):
        return list(self._inputs)

    @property
    def labels(self):
        return list(self._labels)

    @property
    def parameters(self):
        return list(self.graph.parameter_names())

    @property
    def state(self):
        """Names of the state tensors the step reads or writes."""
        return list(self.graph.state_names())

    def compile(self, optimizer="default", lr_schedule=None, microbatch=None,
                **options):
        """Autodiff, the optimizer update, liveness and the memory plan, in
        process. `optimizer` is zcc.adamw(...), zcc.sgd(...) or None (the
        gradients become outputs); the default is zcc.adamw(). For a step
        from zcc.from_torch it may be the script's torch optimizer (AdamW,
        Adam, SGD; parameter groups differing in weight decay), and
        `lr_schedule` its scheduler (a LambdaLR of nanoGPT's shape,
        CosineAnnealingLR, a LinearLR warmup, SequentialLR of those): read,
        not restated; what zcc cannot express raises zcc.Error naming it.
        `lr_schedule` (zcc.lr_schedule(...)) changes the learning rate from
        step to step (warmup, then cosine or linear decay); the plan
        computes it from its step counter and returns it as `lr`.

        Every other keyword is a compile option by its name, the same as
        zcc's flag with `_` for `-` (zcc.compile_options() lists them with
        their defaults and meanings; docs/generated/CompileOptions.md); None
        keeps the default. For example `accumulate=True` (microbatch and
        apply entries), `precision="bf16"`, `memory_budget="4GiB"` (byte
        counts are numbers or text with a unit), `recompute=False`,
        `clip_grad_norm=1.0`, `data_parallel=True, bucket_bytes="1MiB"`,
        `shard_optimizer_state=True, world_size=2` (ZeRO-1,
        docs/distributed.md), `planner_node_limit`, `planner_time_limit`
        (docs/planner.md). An option's rule that is broken raises zcc.Error
        naming it.

        `fit` (device memory: bytes or text such as "80GB") on a step from
        zcc.from_torch chooses the microbatch too: the sizes dividing the
        examples' batch (the global batch), each imported again, largest
        first; the first that fits as it is, else the one recomputing the
        fewest FLOPs under the budget the device leaves (fit_reserve kept
        for the CUDA context and libraries). The result's `fit_report`
        shows every size tried; its sessions take the global batch and run
        it as that many microbatches (accumulate=True, grad_scale divided
        by their number: the mean of a mean loss). A choice that does not
        fit raises zcc.OutOfMemoryError with that table. `microbatch=N`
        takes that size. On other steps `fit` is a memory budget alone."""
        if microbatch is not None or (options.get("fit") and
                                      hasattr(self, "_reimport")):
            return self._compile_fitted(optimizer, lr_schedule, microbatch,
                                        options)
        return self._compile(optimizer, lr_schedule, options)

    def _compile_fitted(self, optimizer, lr_schedule, microbatch, options):
        from . import _fit
        if not hasattr(self, "_reimport"):
            raise Error("compile: microbatch= needs a step from "
                        "zcc.from_torch (imported again at that size)")
        if isinstance(microbatch, bool) or (
                microbatch is not None and int(microbatch) != microbatch):
            raise Error(f"compile: microbatch must be a whole number, got "
                        f"{microbatch!r}")
        sizes = _compile_options(None, None, {
            "fit": options.get("fit"), "fit_reserve": options.get("fit_reserve")})
        return _fit.choose(
            self, sizes.fit, sizes.fit_reserve,
            None if microbatch is None else int(microbatch),
            lambda traced, k: traced._compile(optimizer, lr_schedule, options,
                                              microbatches=k),
            options)

    def _compile(self, optimizer, lr_schedule, options, microbatches=None):
        """The plan, or with `microbatches` one size of compile(fit=...):
        (its row, its Compiled or None when it does not fit)."""
        optimizer, lr_schedule = self._from_torch(optimizer, lr_schedule)
        compile_options = _compile_options(optimizer, lr_schedule, options)
        if microbatches is not None:
            row, plan, warned = self.graph.fit_candidate(compile_options,
                                                         microbatches)
            _warn(warned)
            if row["result"] == "no":
                return row, None
            # The options fitCandidate compiled with (planned_ir's).
            if microbatches > 1:
                compile_options.accumulate = True
                compile_options.grad_scale /= microbatches
            if row["result"] == "recomputing":
                compile_options.memory_budget = \
                    compile_options.fit - row["other"]
            compile_options.fit = 0
            return row, self._compiled(plan, compile_options)
        plan, _, warned = self.graph.compile(compile_options)
        _warn(warned)
        return self._compiled(plan, compile_options)

    def _compiled(self, plan, compile_options):
        return Compiled(plan, self._inputs + self._labels,
                        self.parameters + self.state,
                        accumulate=compile_options.accumulate, traced=self,
                        options=compile_options, values=self._values,
                        entries=self._entries)


    def _from_torch(self, optimizer, lr_schedule):
        """A torch optimizer and scheduler (from_torch's modules) as zcc's:
        their hyperparameters read, not restated."""
        is_torch = type(optimizer).__module__.startswith("torch.optim")
        schedule_is_torch = type(lr_schedule).__module__.startswith("torch.optim")
        if not is_torch and not schedule_is_torch:
            return optimizer, lr_schedule
        from . import _torch_optim
        names = getattr(self, "_torch_names", None)
        if names is None:
            raise Error("compile: a torch optimizer or scheduler needs a step "
                        "imported with zcc.from_torch (its parameters' names)")
        lr = None
        if is_torch:
            lr = _torch_optim.base_lr(optimizer)
            zcc_optimizer = _torch_optim.optimizer_from_torch(optimizer, names)
        elif schedule_is_torch:
            raise Error("compile: a torch scheduler needs its torch optimizer "
                        "(optimizer=) too")
        if schedule_is_torch:
            if lr_schedule.optimizer is not optimizer:
                raise Error("compile: the scheduler is another optimizer's")
            lr_schedule = _torch_optim.schedule_from_torch(lr_schedule, lr)
        return zcc_optimizer, lr_schedule


def compile_options():
    """Every compile option: {name: (default as text, meaning, the pass that
    reads it)}, in the order of docs/generated/CompileOptions.md."""
    return {name: (default, help, reader) for name, _, default, help, reader
            in _zcc.compile_option_table()}


def _compile_options(optimizer, lr_schedule, keywords):
    """Traced.compile's and compile_mlir's options as the compiler's: the
    optimizer and schedule objects, then each keyword by its option name."""
    options = _zcc.CompileOptions()
    if isinstance(optimizer, str) and optimizer == "default":
        optimizer = adamw()
    if optimizer is None:
        options.optimizer = "none"
    elif isinstance(optimizer, _Optimizer):
        optimizer._apply(options)
    else:
        raise Error(
            "optimizer must be zcc.adamw(...), zcc.sgd(...) or None, got "
            f"{optimizer!r}"
        )
    if lr_schedule is not None:
        if not isinstance(lr_schedule, _Schedule):
            raise Error("lr_schedule must be zcc.lr_schedule(...) or None, "
                        f"got {lr_schedule!r}")
        lr_schedule._apply(options)
    kinds = {row[0]: row[1] for row in _zcc.compile_option_table()}
    for name, value in keywords.items():
        if value is None:
            continue
        if name not in kinds:
            import difflib
            near = difflib.get_close_matches(name, list(kinds), n=1)
            raise Error(f"unknown compile option {name!r}" +
                        (f"; did you mean {near[0]!r}?" if near else
                         " (zcc.compile_options() lists them)"))
        kind = kinds[name]
        try:
            if kind == "flag":
                if not isinstance(value, (bool, int)):
                    raise ValueError(f"option '{name}' must be True or False, "
                                     f"got {value!r}")
                setattr(options, name, bool(value))
            elif kind == "names":
                names = [value] if isinstance(value, str) else list(value)
                setattr(options, name, [str(n) for n in names])
            elif isinstance(value, str) and kind != "text":
                options.set(name, value)
            elif kind == "number":
                setattr(options, name, float(value))
            elif kind in ("integer", "bytes"):
                if isinstance(value, bool) or int(value) != value:
                    raise ValueError(f"option '{name}' must be a whole "
                                     f"number, got {value!r}")
                setattr(options, name, int(value))
            else:
                setattr(options, name, str(value))
        except (TypeError, ValueError) as error:
            raise Error(str(error)) from None
    # The rules are checked once, by the compile (the same message as zcc's).
    return options


def trace(fn, *specs, **named_specs):
    """Traces `fn` once with a zcc.Tensor per argument (declared by
    zcc.input / zcc.label, by keyword or by position) and returns the
    Traced step. `fn` returns the scalar loss."""
    symbol = _symbol(getattr(fn, "__name__", "step"))
    graph = _zcc.Graph(symbol)
    inputs, labels, values, _, named = _trace_into(graph, fn, specs,
                                                   named_specs, "finish")
    return Traced(graph, inputs, labels, values, symbol=symbol, specs=named)


def _trace_into(graph, fn, specs, named_specs, finish):
    """Traces `fn` into `graph` and ends it with `finish` ("finish",
    "finish_eval" or "finish_predict"): (input names, label names, given
    parameter values, the result's form, {argument: spec})."""
    import inspect

    call = {"finish": "trace", "finish_eval": "add_eval",
            "finish_predict": "add_predict"}[finish]
    parameters = list(inspect.signature(fn).parameters)
    if len(specs) > len(parameters):
        raise Error(
            f"{call}: {len(specs)} positional specs for "
            f"{len(parameters)} parameters of {fn.__name__}"
        )
    named = list(zip(parameters, specs)) + list(named_specs.items())
    for name, spec in named:
        if not isinstance(spec, _Spec):
            raise Error(
                f"{call}: argument '{name}' must be zcc.input(...) or "
                f"zcc.label(...), got {type(spec).__name__}"
            )
        if finish == "finish_predict" and spec.role == "label":
            raise Error(f"{call}: argument '{name}' is a label; a predict "
                        "function takes inputs only")
    holder = _TraceState(graph)
    previous = getattr(_state, "graph", None)
    _state.graph = holder
    try:
        file, line = _where()
        args = {}
        inputs, labels = [], []
        for name, spec in named:
            declare = graph.input if spec.role == "input" else graph.label
            args[name] = Tensor(
                declare(name, spec.shape, spec.dtype, file, line), holder)
            (inputs if spec.role == "input" else labels).append(name)
        result = fn(**args)
        what = getattr(fn, "__name__", "the function")
        file, line = _where()
        form = None
        if finish != "finish_predict":
            if not isinstance(result, Tensor):
                raise Error(f"{call}: {what} must return the loss as a "
                            f"zcc.Tensor, got {type(result).__name__}")
            getattr(graph, finish)(result._t, file, line)
        else:
            if isinstance(result, Tensor):
                form, outputs = "one", [("output", result)]
            elif isinstance(result, dict):
                form, outputs = "dict", [(str(k), v) for k, v in result.items()]
            elif isinstance(result, (list, tuple)):
                form = "tuple"
                outputs = [(f"output{i}", v) for i, v in enumerate(result)]
            else:
                outputs = None
            if not outputs or not all(isinstance(v, Tensor)
                                      for _, v in outputs):
                raise Error(f"{call}: {what} must return its predictions: a "
                            "zcc.Tensor, or a tuple or dict of them, got "
                            f"{type(result).__name__}")
            graph.finish_predict([(n, v._t) for n, v in outputs], file, line)
            form = (form, [n for n, _ in outputs])
    finally:
        _state.graph = previous
    return inputs, labels, holder.values, form, dict(named)


def _feeds(call, order, arrays, named):
    """{name: array} from arrays by position (in `order`) and by name."""
    if len(arrays) > len(order):
        raise Error(f"{call}: {len(arrays)} arrays given, the entry takes "
                    f"{len(order)} ({', '.join(order)})")
    feeds = dict(zip(order, arrays))
    for name, value in named.items():
        if name in feeds:
            raise Error(f"{call}: '{name}' given both by position and by name")
        feeds[name] = value
    for name, value in feeds.items():
        if not isinstance(value, np.ndarray):
            feeds[name] = _host_array(value)
    return feeds


def _host_array(value):
    """A feed as NumPy: torch tensors (and other DLPack producers) on the
    CPU without a copy, CUDA tensors copied to the host (the executor then
    copies them into their static slots)."""
    if type(value).__module__.startswith("torch"):
        value = value.detach()
        if value.device.type != "cpu":
            value = value.cpu()
        return np.from_dlpack(value.contiguous())
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        try:
            return np.from_dlpack(value)
        except (TypeError, RuntimeError, BufferError):
            pass  # a device array NumPy cannot view: by its __array__
    return np.asarray(value)


class _TraceState:
    def __init__(self, graph):
        self.graph = graph
        self.values = {}  # parameter name -> its given initial value


class _Options:
    """Compile options made by zcc.<name>(...): set on CompileOptions."""

    def __init__(self, name, **values):
        self.name = name
        self.values = values

    def _apply(self, options):
        for key, value in self.values.items():
            setattr(options, key, value)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.values.items())
        return f"zcc.{self.name}({args})"


class _Optimizer(_Options):
    def _apply(self, options):
        options.optimizer = self.name
        super()._apply(options)


class _Schedule(_Options):
    def __init__(self, **values):
        super().__init__("lr_schedule", **values)


def _decay_groups(decay_min_rank, no_decay):
    """The parameter groups' options: parameters of fewer dimensions than
    `decay_min_rank`, or named by `no_decay` (names, or patterns with * and
    ?), take no weight decay."""
    if isinstance(decay_min_rank, bool) or int(decay_min_rank) != decay_min_rank \
            or decay_min_rank < 0:
        raise Error(f"decay_min_rank must be a whole number >= 0, got "
                    f"{decay_min_rank!r}")
    if isinstance(no_decay, str):
        no_decay = [no_decay]
    names = list(no_decay or ())
    if not all(isinstance(n, str) and n for n in names):
        raise Error(f"no_decay must be parameter names or patterns, got "
                    f"{no_decay!r}")
    return dict(weight_decay_min_rank=int(decay_min_rank),
                no_weight_decay=names)


def adamw(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
          decay_min_rank=0, no_decay=None):
    """AdamW with PyTorch's defaults (torch.optim.AdamW). Parameters of fewer
    dimensions than `decay_min_rank` (nanoGPT: 2), or named by `no_decay`
    (names, or patterns with * and ?), take no weight decay: PyTorch's
    parameter groups."""
    return _Optimizer("adamw", lr=float(lr), beta1=float(betas[0]),
                      beta2=float(betas[1]), eps=float(eps),
                      weight_decay=float(weight_decay),
                      **_decay_groups(decay_min_rank, no_decay))


def sgd(lr, momentum=0.0, nesterov=False, weight_decay=0.0, decay_min_rank=0,
        no_decay=None):
    """SGD (torch.optim.SGD's meaning of each number); `decay_min_rank` and
    `no_decay` as in zcc.adamw."""
    return _Optimizer("sgd", lr=float(lr), momentum=float(momentum),
                      nesterov=bool(nesterov),
                      weight_decay=float(weight_decay),
                      **_decay_groups(decay_min_rank, no_decay))


def lr_schedule(warmup_steps=0, decay=None, decay_steps=0, min_lr=0.0):
    """A learning-rate schedule (nanoGPT's): at optimizer step k (counted
    from 0), lr * (k + 1) / (warmup_steps + 1) during the warmup, then lr
    (decay None), or a `decay` "cosine" or "linear" to `min_lr` at step
    `decay_steps` (warmup included), min_lr after it. The same numbers as a
    torch.optim.lr_scheduler.LambdaLR of that function
    (docs/python.md#learning-rate-schedules)."""
    def whole(name, value):
        if isinstance(value, bool) or int(value) != value:
            raise Error(f"{name} must be a whole number of steps, got "
                        f"{value!r}")
        return int(value)
    if decay is not None and decay not in ("cosine", "linear"):
        raise Error(f"decay must be None, 'cosine' or 'linear', got "
                    f"{decay!r}")
    return _Schedule(lr_warmup_steps=whole("warmup_steps", warmup_steps),
                     lr_decay=decay or "none",
                     lr_decay_steps=whole("decay_steps", decay_steps),
                     min_lr=float(min_lr))


def compile_mlir(text, optimizer="default", name="<string>", lr_schedule=None,
                 **options):
    """Compiles zt text (what `zcc` reads; `name` names it in messages and
    the plan's locations) in process, with Traced.compile's options: the
    same plan, byte for byte, as `zcc` with the same flags."""
    compile_options = _compile_options(optimizer, lr_schedule, options)
    plan, warned = _zcc.compile_source(text, name, compile_options)
    _warn(warned)
    return Compiled(plan, None, None, accumulate=compile_options.accumulate)


def load_plan(path):
    """A .zplan file (from zcc, or Compiled.save) as a Compiled step."""
    plan = _zcc.Plan.load(os.fspath(path))
    return Compiled(plan, None, None, accumulate=plan.accumulates)


class Compiled:
    """A compiled step: the plan, its memory numbers, sessions that run it."""

    def __init__(self, plan, feed_order, parameters, accumulate=False,
                 traced=None, options=None, values=None, entries=None):
        self.plan = plan
        self._entries = entries or {}
        self._values = values or {}
        self._feed_order = feed_order
        self._parameters = parameters
        self._accumulate = accumulate
        self._traced = traced
        self._options = options

    def memory_analysis(self):
        """Bytes: arena, lower_bound, no_reuse, persistent, inputs, outputs,
        constants."""
        return self.plan.memory_analysis()

    def report(self):
        """The plan report `zcc --report` prints."""
        return self.plan.report()

    def memory_timeline(self):
        """The plan's memory timeline (`zcc --memory-json`, schema
        zcc.memory/v1, docs/memory.md) as a dict: per entry every buffer's
        offset, size, lifetime in launches, kind, op and source location,
        and the arena bytes live at each launch."""
        return json.loads(self.plan.memory_timeline())

    def memory_html(self):
        """The timeline drawn (`zcc --memory-html`): one self-contained HTML
        page, as text, to write to a file and open in a browser."""
        return self.plan.memory_html()

    def memory_torch_snapshot(self):
        """The plan as PyTorch's memory snapshot (`zcc
        --memory-torch-snapshot`), pickled bytes: write them to a file and
        open it at pytorch.org/memory_viz, or `pickle.loads` them for
        `torch.cuda._memory_viz`."""
        return self.plan.memory_torch_snapshot()

    def planned_ir(self):
        """The planned zplan program (compiles again to print it)."""
        if self._traced is None:
            raise Error("planned_ir: only a traced step keeps its program")
        return self._traced.graph.compile(self._options, True)[1]

    def save(self, path):
        """Writes the .zplan file that `zrun` runs."""
        self.plan.save(os.fspath(path))

    def session(self, device="cpu", mode="planned", precision="f32", seed=0,
                threads=0, microbatches=None, host_memory_fraction=0.75,
                distributed=False, collective_timeout=300,
                device_ordinal=None):
        """Allocates the plan's memory (the only allocations) and fills the
        parameters from their initializers. `microbatches` (for a step
        compiled with accumulate=True) is how many batches make one step.
        On the CPU, a plan needing more than `host_memory_fraction` of the
        memory the OS reports available fails here, naming the bytes.
        `distributed` joins the MPI job this process is a rank of (started
        by mpirun; a plan compiled with data_parallel=True): each rank
        steps on its own share of the batch (step() returns the loss on
        that share), `session.rank` and
        `session.world_size` say which; every rank calls save(), rank 0
        writes. A collective (on a GPU: a step) not done in
        `collective_timeout` seconds ends the job naming the ranks that did
        not come. `device_ordinal` picks
        the CUDA device; by default device 0, or in a job the rank's place
        among the job's ranks on its host (one GPU per rank)."""
        split = getattr(self, "_split", None)
        if microbatches is None:
            microbatches = split[0] if split else 1
        if device_ordinal is not None and int(device_ordinal) < 0:
            raise Error(f"session: device_ordinal must be a device number "
                        f">= 0, got {device_ordinal}")
        if microbatches > 1 and not self._accumulate:
            raise Error("session: microbatches > 1 needs compile(accumulate=True)")
        native = _zcc.Session(self.plan, device, mode, precision, int(seed),
                              int(threads), int(microbatches),
                              float(host_memory_fraction), bool(distributed),
                              float(collective_timeout),
                              -1 if device_ordinal is None
                              else int(device_ordinal))
        session = Session(native, self._feed_order, self._parameters,
                          self._entries,
                          split if split and microbatches == split[0] else None)
        for name, value in self._values.items():
            session.write(name, value)
        return session


class Session:
    """A running plan: step(), parameters in and out, checkpoints."""

    def __init__(self, native, feed_order, parameters, entries=None,
                 split=None):
        self._native = native
        # (microbatches, microbatch) of a compile(fit=...) choice: step()
        # takes the global batch, eval() and predict() too.
        self._split = split
        feeds = native.feeds()
        self._feed_info = {name: (shape, dtype, role)
                           for name, shape, dtype, role in feeds}
        self._order = feed_order or [name for name, *_ in feeds]
        self._parameters = parameters
        self._entries = entries or {}

    @property
    def feeds(self):
        """{name: (shape, dtype, role)} of what step() takes."""
        return dict(self._feed_info)

    def step(self, *arrays, **named):
        """One optimizer step; returns its loss. Inputs then labels, by
        position (in the order they were declared) or by name; NumPy
        arrays of exactly the declared shape and dtype (stacked
        [microbatches, ...] when the session accumulates)."""
        return self._native.step(
            self._stacked(_feeds("step", self._order, arrays, named)))

    def checked_step(self, *arrays, **named):
        """step(), checking every launch's outputs for NaN and infinity as
        it runs (slower; the CPU executor): returns (loss, report), the
        report naming the first op that wrote a NaN (or, without one, an
        infinity), its phase (forward, backward, update), its source line
        (the traced function's line) and its inputs' ranges, or None when
        every value stayed finite. To find where a run diverged, resume it
        from its last checkpoint and step on its batches with this."""
        loss, report = self._native.checked_step(
            self._stacked(_feeds("step", self._order, arrays, named)))
        return loss, (report or None)

    def eval(self, *arrays, **named):
        """The eval entry's loss on one batch (Traced.add_eval, or
        from_torch): no gradient, no update, nothing persistent written, so
        training goes on exactly as if it had not run. Arrays as step()'s,
        for the eval function's arguments (one batch, never stacked). In a
        data-parallel job, the loss on this rank's batch."""
        order = self._entry_order("eval")
        parts = self._parts("eval", _feeds("eval", order, arrays, named))
        return sum(self._native.evaluate(p) for p in parts) / len(parts)

    def predict(self, *arrays, **named):
        """The predict entry's outputs on one batch of inputs, in the form
        the predict function returned them (an array, a tuple or a dict;
        a dict by name for a plan loaded from a file)."""
        order = self._entry_order("predict")
        parts = [self._native.predict(p) for p in self._parts(
            "predict", _feeds("predict", order, arrays, named))]
        out = parts[0] if len(parts) == 1 else {
            n: np.concatenate([p[n] for p in parts]) for n in parts[0]}
        form = self._entries.get("predict", (None, None))[1]
        if form is None:
            return out
        kind, names = form
        if kind == "one":
            return out[names[0]]
        if kind == "tuple":
            return tuple(out[n] for n in names)
        return {n: out[n] for n in names}

    def _split_as(self, array, shape):
        """How many microbatches `array` stacks when it is a fitted
        session's global batch for a feed of `shape`, else 1."""
        k = self._split[0] if self._split else 1
        if k > 1 and array.ndim == len(shape) and array.ndim >= 1 and \
                array.shape[0] == k * shape[0] and \
                tuple(array.shape[1:]) == tuple(shape[1:]):
            return k
        return 1

    def _stacked(self, feeds):
        """A fitted session's global batch as its stacked microbatches
        (a view); anything else as given."""
        out = {}
        for n, a in feeds.items():
            shape = self._feed_info.get(n, ((),))[0]
            k = self._split_as(a, shape)
            out[n] = a.reshape((k, shape[0]) + a.shape[1:]) if k > 1 else a
        return out

    def _parts(self, kind, feeds):
        """A fitted session's global batch as one feed per microbatch (the
        eval and predict entries take one)."""
        shapes = {n: s for n, s, *_ in self._native.entry_feeds(kind)}
        split = {n: self._split_as(a, shapes[n]) for n, a in feeds.items()
                 if n in shapes}
        if not any(k > 1 for k in split.values()):
            return [feeds]
        k = self._split[0]
        return [{n: np.ascontiguousarray(
                     a[i * shapes[n][0]:(i + 1) * shapes[n][0]])
                 if split.get(n, 1) > 1 else a for n, a in feeds.items()}
                for i in range(k)]

    def _entry_order(self, kind):
        if kind in self._entries:
            return self._entries[kind][0]
        return [name for name, *_ in self._native.entry_feeds(kind)]

    def read(self, name):
        """A copy of a parameter, optimizer state or output, as NumPy."""
        return self._native.read(name)

    def write(self, name, array):
        """Overwrites a parameter (or any persistent tensor) by name."""
        array = np.asarray(array)
        if array.dtype not in (np.float32, np.float64):
            array = array.astype(np.float64)
        # (np.ascontiguousarray makes a scalar 1-d: the copy keeps its shape)
        self._native.write(name, np.array(array, order="C"))

    def state_dict(self):
        """{name: array} of the traced parameters and state."""
        names = self._parameters or []
        return {name: self.read(name) for name in names}

    def load_state_dict(self, state):
        for name, array in state.items():
            self.write(name, array)

    def sync_to(self, module, optimizer=None):
        """Writes this session's state into a PyTorch `module` (its
        parameters and buffers, by their names: a step from zcc.from_torch)
        and, given, its torch `optimizer` (AdamW/Adam's exp_avg, exp_avg_sq
        and step; SGD's momentum_buffer), in their dtypes, so PyTorch can
        continue the run where zcc is (set a scheduler's position with
        `scheduler.last_epoch` if the script has one)."""
        from . import _torch_optim
        _torch_optim.sync_to(self, module, optimizer)

    def sync_from(self, module, optimizer=None):
        """The reverse of sync_to: this session takes `module`'s parameters
        and buffers and `optimizer`'s state (and its step count), so zcc can
        continue a run PyTorch began."""
        from . import _torch_optim
        _torch_optim.sync_from(self, module, optimizer)

    def save(self, path):
        """Every persistent tensor (parameters, optimizer state) as f32
        safetensors. In a data-parallel job every rank calls it (ZeRO-1's
        state is gathered) and rank 0 writes the file."""
        self._native.save(os.fspath(path))

    def load(self, path):
        """Loads a checkpoint written by save() (or zrun); nothing changes
        unless every tensor matches."""
        self._native.load(os.fspath(path))

    def fit(self, batches, steps, checkpoint_dir=None, checkpoint_every=0,
            keep=3, on_nonfinite="stop", report=None, report_every=0):
        """Trains to step `steps` in zrun's loop: `batches(k)` returns step
        k's batch (k from 0; inputs then labels, a tuple or a dict by name,
        as step() takes them: the global batch for a fitted session, the
        microbatches stacked for one given microbatches=). With
        `checkpoint_dir` the run resumes from its newest good checkpoint
        (the step after it), writes one there every `checkpoint_every`
        steps and at the last (keeping `keep`), and a non-finite loss or
        gradient norm is replayed from it, checked, naming the op writing
        it; `on_nonfinite="skip-step"` then goes on without that step's
        update (a warning each), "stop" raises. SIGTERM or SIGINT stops at
        the end of the running step, after its checkpoint. `report(step,
        loss, metrics)` (metrics: grad_norm, lr where the plan has them) is
        called every `report_every` steps (0: every step up to 1000, else
        about a hundred times) and at the last; its error ends the run
        after that step. An error of `batches` ends the step before it
        runs, and is raised. Returns {steps_run, first_step, first_loss,
        last_loss, steps_skipped, stopped_by (the signal, 0), seconds}."""
        microbatches = self._native.microbatches
        shapes = {n: info[0] for n, info in self._feed_info.items()}
        held = {}

        def microbatch(n):
            step, part = divmod(n, microbatches)
            if held.get("step") != step:
                value = batches(step)
                arrays, named = ((), value) if isinstance(value, dict) \
                    else (tuple(value), {})
                held["step"] = step
                held["feeds"] = self._stacked(
                    _feeds("fit", self._order, arrays, named))
            feeds = held["feeds"]
            if microbatches == 1:
                return feeds
            parts = {}
            for n, a in feeds.items():
                want = (microbatches,) + tuple(shapes.get(n, ()))
                if tuple(a.shape) != want:
                    raise Error(f"fit: '{n}' expects shape {want} (the "
                                f"microbatches stacked), got {tuple(a.shape)}")
                parts[n] = a[part]
            return parts

        result = self._native.fit(
            microbatch, int(steps),
            "" if checkpoint_dir is None else os.fspath(checkpoint_dir),
            int(checkpoint_every), int(keep), str(on_nonfinite), report,
            int(report_every))
        for note in result.pop("notes"):
            warnings.warn(note, stacklevel=2)
        for text in result.pop("skipped"):
            warnings.warn(text, stacklevel=2)
        return result

    def checkpoint(self, directory, keep=3):
        """A checkpoint of the run in `directory` (created if missing):
        everything to continue it exactly (parameters, optimizer and other
        state, step counters, hence dropout's random numbers and the
        learning-rate schedule's position, and the number of steps done, the
        data position of a script that feeds batch `steps_done`). Written
        as step-N.safetensors, then manifest.json listing the newest `keep`
        with their checksums, each atomically; older ones are removed.
        Returns the file's path. In a data-parallel job every rank calls it
        and rank 0 writes."""
        return self._native.checkpoint(os.fspath(directory), int(keep))

    def resume(self, directory):
        """Continues the run checkpointed in `directory`: loads its newest
        checkpoint whose bytes verify (warning about any newer one passed
        over: truncated, corrupt) and returns its steps done, the number of
        the step to run next minus one; 0, with nothing changed, when the
        directory holds none yet. The same script with the same seed then
        gives the uninterrupted run's bits."""
        done, _, notes = self._native.resume(os.fspath(directory))
        for note in notes:
            warnings.warn(note, stacklevel=2)
        return done

    @property
    def steps_done(self):
        """Optimizer steps run by this session, counting those before a
        resume."""
        return self._native.steps_done

    def stats(self):
        return self._native.stats()

    @property
    def rank(self):
        """This process's rank in its data-parallel job (0 alone)."""
        return self._native.rank

    @property
    def world_size(self):
        """The ranks of the data-parallel job (1 alone)."""
        return self._native.world_size

    @property
    def step_count(self):
        """Steps run so far: what the next step's dropout masks and AdamW's
        bias correction see. Settable, to repeat a step exactly."""
        return self._native.step_count

    @step_count.setter
    def step_count(self, steps):
        self._native.step_count = int(steps)
