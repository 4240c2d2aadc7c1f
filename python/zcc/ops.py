"""zt ops for traced tensors, with NumPy broadcasting and numbers allowed
where a tensor is. Each op is checked as it is traced; an error is a
zcc.Error naming your file and line."""

import builtins
import numbers

import numpy as np

from . import _zcc
from ._trace import Tensor, _current, _dtype, _error, _where


def _graph(*values):
    for v in values:
        if isinstance(v, Tensor):
            return v._trace
    return _current()


def _wrap(trace, handle):
    return Tensor(handle, trace)


def _tensor(value, like):
    """`value` as a tensor of like's graph: numbers and arrays become
    constants (numbers in like's dtype)."""
    if isinstance(value, Tensor):
        return value
    trace = like._trace
    file, line = _where()
    if isinstance(value, numbers.Number):
        return _wrap(trace, trace.graph.full([], float(value), like._t.dtype,
                                             file, line))
    array = np.asarray(value)
    dtype = _dtype(array.dtype if array.dtype != np.float64 else np.float32)
    return _wrap(trace, trace.graph.constant(
        list(array.shape), array.astype(np.float64).ravel().tolist(), dtype,
        file, line))


# The element ops' rows (ElementKernels.h): name -> (row, arity, params,
# ATen overloads).
_ROWS = {name: (row, arity, params, torch)
         for row, name, arity, params, torch in _zcc.element_rows()}


def _element(trace, name, operands, params=()):
    file, line = _where()
    return _wrap(trace, trace.graph.element(
        _ROWS[name][0], [t._t for t in operands], [float(p) for p in params],
        file, line))


# The binary ops zt computes on integers (the rest promote them to float).
_ON_INTEGERS = ("add", "sub", "mul", "eq", "ne", "lt", "le", "gt", "ge")


def _binary(name, a, b, params=()):
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise _error(f"{name}: at least one operand must be a zcc tensor")
    trace = _graph(a, b)
    file, line = _where()
    g = trace.graph
    # PyTorch's promotion: integers meeting a float (tensor or number), or
    # divided, compute in float.
    integer = [isinstance(t, Tensor) and t.dtype in ("int32", "int64")
               for t in (a, b)]
    floats = [isinstance(t, Tensor) and t.dtype == "float32" or
              isinstance(t, numbers.Real) and not isinstance(t, numbers.Integral)
              for t in (a, b)]
    if any(integer) and (any(floats) or name not in _ON_INTEGERS):
        a, b = (convert(t, "float32") if i else t for t, i in zip((a, b), integer))
    integers = any(isinstance(t, Tensor) and t.dtype in ("int32", "int64")
                   for t in (a, b))
    if name in ("add", "sub", "mul", "div") and not integers:
        if isinstance(a, Tensor) and isinstance(b, numbers.Number):
            return _wrap(trace, getattr(g, name + "_scalar")(
                a._t, float(b), file, line))
        if isinstance(b, Tensor) and isinstance(a, numbers.Number):
            if name in ("add", "mul"):
                return _wrap(trace, getattr(g, name + "_scalar")(
                    b._t, float(a), file, line))
            if name == "sub":  # a - b = (-b) + a
                return _wrap(trace, g.add_scalar(
                    _element(trace, "neg", [b])._t, float(a), file, line))
            # a / b: the number broadcast to b's shape, divided, when f32
            # holds it exactly; else a times 1 / b, the number a parameter
            # (an f32 constant would round it in the f64 reference).
            if float(np.float32(a)) != float(a):
                return _wrap(trace, g.mul_scalar(
                    _element(trace, "reciprocal", [b])._t, float(a), file, line))
            numerator = _wrap(trace, g.full(list(b.shape), float(a),
                                            b._t.dtype, file, line))
            return _element(trace, "div", [numerator, b])
    a = _tensor(a, b) if not isinstance(a, Tensor) else a
    b = _tensor(b, a) if not isinstance(b, Tensor) else b
    return _element(trace, name, [a, b], params)


def add(a, b):
    return _binary("add", a, b)


def sub(a, b):
    return _binary("sub", a, b)


def mul(a, b):
    return _binary("mul", a, b)


def div(a, b):
    return _binary("div", a, b)


def _unary(name, x, params=()):
    if not isinstance(x, Tensor):
        raise _error(f"{name}: expects a zcc tensor, got {type(x).__name__}")
    return _element(x._trace, name, [x], params)


def gelu(x, approximate="none"):
    """PyTorch's meaning: approximate="none" is the exact erf form,
    "tanh" the tanh approximation."""
    if approximate == "none":
        return _unary("gelu_erf", x)
    if approximate == "tanh":
        return _unary("gelu", x)
    raise _error(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def _bind_params(name, params, args, kwargs):
    """The row's params from positional and keyword arguments, defaults for
    the rest, in the row's order."""
    names = [p for p, _ in params]
    if len(args) > len(names):
        raise _error(f"{name}: takes {len(names)} numbers after its tensors "
                     f"({', '.join(names) or 'none'}), got {len(args)}")
    values = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names:
            raise _error(f"{name}: unknown argument {key!r} "
                         f"(takes {', '.join(names) or 'none'})")
        if key in values:
            raise _error(f"{name}: argument {key!r} given twice")
        values[key] = value
    out = []
    for param, default in params:
        value = values.get(param, default)
        if value is None:  # PyTorch's open bound (clamp's min=None)
            value = default
        if not isinstance(value, numbers.Real):
            raise _error(f"{name}: {param} must be a number, got "
                         f"{type(value).__name__}")
        out.append(float(value))
    return out


def _select(name, condition, a, b, params=()):
    """where(condition, a, b): numbers become constants of the other
    choice's type; the three broadcast together."""
    tensors = [t for t in (condition, a, b) if isinstance(t, Tensor)]
    if not isinstance(condition, Tensor) or len(tensors) < 2:
        raise _error(f"{name}: the condition and at least one choice must be "
                     "zcc tensors")
    a = _tensor(a, b) if not isinstance(a, Tensor) else a
    b = _tensor(b, a) if not isinstance(b, Tensor) else b
    return _element(condition._trace, name, [condition, a, b], params)


def _define_element_op(name, arity, params):
    signature = ", ".join([p + "=" + repr(d) for p, d in params])
    if arity in ("unary", "bool_unary"):
        def op(x, *args, **kwargs):
            return _unary(name, x, _bind_params(name, params, args, kwargs))
        operands = "x"
    elif arity == "select":
        def op(condition, a, b, *args, **kwargs):
            return _select(name, condition, a, b,
                           _bind_params(name, params, args, kwargs))
        operands = "condition, a, b"
    else:
        def op(a, b, *args, **kwargs):
            return _binary(name, a, b, _bind_params(name, params, args, kwargs))
        operands = "a, b"
    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"{name}({operands}{', ' if params else ''}{signature}): "
                  f"zt.{name}, element by element"
                  + (" (NumPy broadcasting, numbers allowed)."
                     if operands != "x" else "."))
    return op


def scale(x, factor):
    file, line = _where()
    return _wrap(x._trace, x._trace.graph.scale(x._t, float(factor), file, line))


def matmul(a, b, transpose_a=False, transpose_b=False):
    """[..., M, K] @ [K, N] or [..., K, N]."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise _error("matmul: both operands must be zcc tensors")
    file, line = _where()
    return _wrap(a._trace, a._trace.graph.matmul(a._t, b._t, bool(transpose_a),
                                                 bool(transpose_b), file, line))


def attention(q, k, v, causal=False, scale=None, mask=None, dropout=0.0,
              seed=None):
    """Fused scaled dot-product attention, softmax(q k^T * scale) v, over
    [..., S, D] queries, [..., T, D] keys and [..., T, Dv] values (PyTorch's
    F.scaled_dot_product_attention with is_causal, and a boolean attn_mask).
    `scale` defaults to 1/sqrt(D). `mask`, a bool tensor of q's rank whose
    dimensions are those of the scores [..., S, T] or 1, lets a query see
    only the keys where it is true (a padding mask [B, 1, 1, T]); a query
    that sees no key gives 0, as in PyTorch. Grouped-query attention: k and
    v may have fewer heads (dimension -3) than q, a divisor of q's; query
    head h reads head h // (H // Hkv), as PyTorch's enable_gqa. `dropout`
    drops the probabilities out (PyTorch's dropout_p), drawn as
    zcc.ops.dropout's mask at `seed` would be on the [..., S, T]
    probabilities, again in the backward. Only the output and one
    logsumexp per query row are saved for the backward; the [S, T]
    probabilities are never stored."""
    if not all(isinstance(t, Tensor) for t in (q, k, v)):
        raise _error("attention: q, k and v must be zcc tensors")
    file, line = _where()
    scale = float("nan") if scale is None else float(scale)
    seed = -1 if seed is None else int(seed)
    if mask is None:
        return _wrap(q._trace, q._trace.graph.attention(
            q._t, k._t, v._t, bool(causal), scale, float(dropout), seed, file,
            line))
    if not isinstance(mask, Tensor):
        raise _error("attention: mask must be a zcc tensor (bool)")
    return _wrap(q._trace, q._trace.graph.masked_attention(
        q._t, k._t, v._t, mask._t, bool(causal), scale, float(dropout), seed,
        file, line))


def _dims(x, dim):
    if dim is None:
        return []
    if isinstance(dim, (int, np.integer)):
        return [int(dim)]
    return [int(d) for d in dim]


def _reduce(name, x, dim, keepdim):
    file, line = _where()
    return _wrap(x._trace, getattr(x._trace.graph, name)(
        x._t, _dims(x, dim), bool(keepdim), file, line))


def sum(x, dim=None, keepdim=False):
    return _reduce("sum", x, dim, keepdim)


def mean(x, dim=None, keepdim=False):
    return _reduce("mean", x, dim, keepdim)


def max(x, dim=None, keepdim=False):
    return _reduce("max", x, dim, keepdim)


def op(name, *operands, **params):
    """The zt op `name` whose kernel's rule gives its results (see
    `zcc._zcc.inferred_ops()`), built by name: `op("cumsum", x, dim=1)`.
    Parameters are keywords named as the op's attributes, a flag as a bool.
    Returns the result, or a tuple of the results."""
    if not operands or not all(isinstance(t, Tensor) for t in operands):
        raise _error(f"{name}: the operands must be zcc tensors")
    trace = operands[0]._trace
    file, line = _where()
    results = tuple(_wrap(trace, r) for r in trace.graph.op(
        name, [t._t for t in operands], params, file, line))
    return results[0] if len(results) == 1 else results


def _define_inferred_op(name, params):
    def f(*operands, **kwargs):
        return op(name, *operands, **kwargs)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"zt.{name}: operands positional, parameters by keyword ("
                 + ", ".join(f"{p}: {kind}" for p, kind in params) + ").")
    return f


# Every op built by name gets its function: zcc.ops.cumsum(x, dim=1).
for _name, _params in _zcc.inferred_ops():
    if _name not in globals():
        globals()[_name] = _define_inferred_op(_name, _params)


def rotary(x, cos, sin, transposed=False):
    """Rotary position embeddings over x's last dimension (even): x * cos +
    rotate_half(x) * sin, rotate_half(x) = concat(-x2, x1) of its halves;
    `transposed`: the transposed map, its gradient. cos and sin broadcast
    to x's shape (NumPy's rule)."""
    cos, sin = (broadcast_to(t, x.shape) if tuple(t.shape) != tuple(x.shape)
                else t for t in (cos, sin))
    return op("rotary", x, cos, sin, transposed=transposed)


def softmax(x, axis=-1):
    file, line = _where()
    return _wrap(x._trace, x._trace.graph.softmax(x._t, int(axis), file, line))


def log_softmax(x, axis=-1):
    file, line = _where()
    return _wrap(x._trace, x._trace.graph.log_softmax(x._t, int(axis), file,
                                                      line))


def layer_norm(x, weight, bias, eps=1e-5):
    """Over the last dimension."""
    file, line = _where()
    return _wrap(x._trace, x._trace.graph.layer_norm(x._t, weight._t, bias._t,
                                                     float(eps), file, line))


def rms_norm(x, weight, eps=1e-6):
    file, line = _where()
    return _wrap(x._trace, x._trace.graph.rms_norm(x._t, weight._t, float(eps),
                                                   file, line))


def embedding(table, indices):
    """table [V, D] indexed by integer indices [...] -> [..., D]."""
    file, line = _where()
    return _wrap(table._trace, table._trace.graph.embedding(
        table._t, indices._t, file, line))


def cross_entropy(logits, labels, ignore_index=None, label_smoothing=0.0):
    """Mean softmax cross-entropy of logits [..., C] and integer labels
    [...] (PyTorch's F.cross_entropy with the classes last). With
    `ignore_index` (PyTorch's is -100), the rows with that label add nothing
    and the mean is over the others; `label_smoothing` in [0, 1] mixes the
    one-hot target with the uniform one, as PyTorch's."""
    file, line = _where()
    graph = logits._trace.graph
    if ignore_index is None and not label_smoothing:
        return _wrap(logits._trace, graph.softmax_cross_entropy(
            logits._t, labels._t, file, line))
    return _wrap(logits._trace, graph.softmax_cross_entropy_with(
        logits._t, labels._t, ignore_index is not None,
        0 if ignore_index is None else int(ignore_index),
        float(label_smoothing), file, line))


softmax_cross_entropy = cross_entropy


def mse(prediction, target):
    """Mean squared error over every element."""
    file, line = _where()
    return _wrap(prediction._trace, prediction._trace.graph.mse(
        prediction._t, target._t, file, line))


def dropout(x, p=0.5, seed=None):
    """Inverted dropout; the mask is a pure function of (seed, step,
    index), recomputed in the backward. p=0 is the identity."""
    file, line = _where()
    return _wrap(x._trace, x._trace.graph.dropout(
        x._t, float(p), -1 if seed is None else int(seed), file, line))


def reshape(x, shape):
    file, line = _where()
    return _wrap(x._trace, x._trace.graph.reshape(x._t, [int(d) for d in shape],
                                                  file, line))


def transpose(x, perm):
    """Permutes the dimensions (NumPy's transpose with axes)."""
    file, line = _where()
    return _wrap(x._trace, x._trace.graph.transpose(x._t, [int(d) for d in perm],
                                                    file, line))


def swapaxes(x, a, b):
    file, line = _where()
    return _wrap(x._trace, x._trace.graph.swap_axes(x._t, int(a), int(b), file,
                                                    line))


def broadcast_to(x, shape):
    file, line = _where()
    return _wrap(x._trace, x._trace.graph.broadcast_to(
        x._t, [int(d) for d in shape], file, line))


def concat(tensors, dim=0):
    tensors = list(tensors)
    if not tensors or not builtins.all(isinstance(t, Tensor) for t in tensors):
        raise _error("concat: expects a non-empty list of zcc tensors")
    file, line = _where()
    trace = tensors[0]._trace
    return _wrap(trace, trace.graph.concat([t._t for t in tensors], int(dim),
                                           file, line))


cat = concat


def split(x, size, dim=-1):
    """Pieces of `size` along `dim` (PyTorch's torch.split with an int)."""
    n = x.shape[dim]
    return [slice_dim(x, dim, start, builtins.min(start + size, n))
            for start in range(0, n, size)]


def slice_dim(x, dim, begin, end):
    """x[..., begin:end, ...] along `dim` (Python's rules for negative and
    out-of-range bounds)."""
    file, line = _where()
    return _wrap(x._trace, x._trace.graph.slice_dim(x._t, int(dim), int(begin),
                                                    int(end), file, line))


def getitem(x, index):
    """Basic indexing: integers, slices with positive steps, Ellipsis."""
    if not isinstance(index, tuple):
        index = (index,)
    if builtins.sum(1 for i in index if i is Ellipsis) > 1:
        raise _error("indexing: at most one Ellipsis")
    rank = x.ndim
    count = builtins.sum(1 for i in index if i is not Ellipsis)
    if count > rank:
        raise _error(f"indexing: {count} indices for a rank-{rank} tensor")
    full = []
    for i in index:
        if i is Ellipsis:
            full.extend([slice(None)] * (rank - count))
        else:
            full.append(i)
    full.extend([slice(None)] * (rank - len(full)))
    start, limit, strides, dropped = [], [], [], []
    for d, (i, size) in enumerate(zip(full, x.shape)):
        if isinstance(i, (int, np.integer)):
            i = int(i)
            if i < -size or i >= size:
                raise _error(f"indexing: index {i} is out of range for "
                             f"dimension {d} of size {size}")
            i %= size
            start.append(i), limit.append(i + 1), strides.append(1)
            dropped.append(d)
        elif isinstance(i, slice):
            b, e, s = i.indices(size)
            if s < 1:
                raise _error("indexing: only positive slice steps are supported")
            start.append(b), limit.append(builtins.max(e, b)), strides.append(s)
        else:
            raise _error(f"indexing: unsupported index {i!r} (integers, slices "
                         "and ... only)")
    file, line = _where()
    g = x._trace.graph
    if start != [0] * rank or limit != list(x.shape) or strides != [1] * rank:
        y = _wrap(x._trace, g.slice(x._t, start, limit, strides, file, line))
    else:
        y = x
    if dropped:
        shape = [n for d, n in enumerate(y.shape) if d not in dropped]
        y = _wrap(x._trace, g.reshape(y._t, shape, file, line))
    return y


def convert(x, dtype):
    """x in another element type ("float32", "int32", "int64", "bool"):
    floats to integers truncate toward zero, to bool is != 0; the gradient
    passes only between floats."""
    file, line = _where()
    return _wrap(x._trace, x._trace.graph.convert(x._t, _dtype(dtype), file,
                                                  line))


def full(shape, value, dtype="float32"):
    trace = _current()
    file, line = _where()
    return _wrap(trace, trace.graph.full([int(d) for d in shape], float(value),
                                         _dtype(dtype), file, line))


def constant(array, dtype=None):
    """A constant from an array (float64 data becomes float32)."""
    trace = _current()
    array = np.asarray(array)
    if dtype is None:
        dtype = np.float32 if array.dtype.kind == "f" else array.dtype
    file, line = _where()
    return _wrap(trace, trace.graph.constant(
        list(array.shape), array.astype(np.float64).ravel().tolist(),
        _dtype(dtype), file, line))


def causal_mask(size):
    """[size, size]: 0 on and below the diagonal, -inf above."""
    trace = _current()
    file, line = _where()
    return _wrap(trace, trace.graph.causal_mask(int(size), file, line))


def step_counter():
    """The step counter (int64 scalar, written by the runtime)."""
    trace = _current()
    file, line = _where()
    return _wrap(trace, trace.graph.step(file, line))


# Every element row but the gradients, unless defined in this file by hand.
for _name, (_row, _arity, _params, _torch) in _ROWS.items():
    if _arity != "grad" and _name not in globals():
        globals()[_name] = _define_element_op(_name, _arity, _params)
