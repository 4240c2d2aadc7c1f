"""zcc.from_torch: a PyTorch module and its loss, through torch.export,
into the same Traced step zcc.trace makes.

The exported graph (the training IR of torch.export) is walked node by node
as torch-mlir's FX importer does: its signature gives the parameters (named
by their PyTorch names, their current values given at load), the buffers
and the user inputs; each ATen op maps to zt ops, each emitted op located at
the node's own source line. Every unsupported op is reported at once."""

import inspect
import math
import operator
import os
import re

import numpy as np

from . import _zcc, ops
from ._trace import (Error, Tensor, _location, param, state as _state, trace,
                     update as _update, input as _input, label as _label)


def _frame(node):
    """(file, line) of the innermost frame of the node's stack trace that is
    the user's code (not PyTorch's own modules), else the innermost."""
    import torch
    libraries = (os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,
                 os.path.dirname(os.path.abspath(__file__)) + os.sep)
    text = node.meta.get("stack_trace") or ""
    found = re.findall(r'File "([^"]+)", line (\d+)', text)
    if not found:
        return ("", 0)
    user = [f for f in found
            if not os.path.abspath(f[0]).startswith(libraries)]
    file, line = (user or found)[-1]
    return (file, int(line))


def _where_of(node):
    file, line = _frame(node)
    return f"{file}:{line}" if file else "(no source line)"


def _module_path(node, prefix):
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    path = re.sub(r"^L\['self'\]\.?", "", path)
    if path.startswith(prefix):
        path = path[len(prefix):]
    elif path + "." == prefix:
        path = ""
    return path or "(top level)"


def _aten(name):
    import torch
    packet, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload or "default")


class _Const:
    """A value known at import: a buffer, a lifted constant, or an op on
    such values, folded by running it in PyTorch. It becomes a zt.constant
    only where a traced op uses it."""

    def __init__(self, value):
        self.value = value  # a torch tensor, a tuple of them, or a number
        self.tensor = None  # its zcc constant, made on first use


class _Context:
    def __init__(self):
        self.values = {}
        self.states = {}  # a mutated buffer's placeholder -> its zcc.state

    def write(self, node, value):
        """The step writes `value` over the buffer `node` (a placeholder):
        later reads see it, and the last one is the state's update."""
        if node not in self.states:
            raise Error(f"from_torch: '{getattr(node, 'name', node)}' is "
                        "written in place but is not a buffer the step "
                        "updates")
        shape = list(self.states[node].shape)
        self.values[node] = ops.reshape(value, shape) \
            if list(value.shape) != shape else value

    def get(self, arg):
        """A node's value, or the argument itself (numbers, lists)."""
        import torch.fx as fx
        if isinstance(arg, fx.Node):
            value = self.values[arg]
            if isinstance(value, _Const):
                if value.tensor is None:
                    array = value.value.detach().cpu().numpy()
                    if array.dtype == np.bool_:  # bytes, then a comparison
                        value.tensor = ops.ne(
                            ops.constant(array.astype(np.int32), "int32"), 0)
                    else:
                        value.tensor = ops.constant(
                            array, "float32" if array.dtype.kind == "f"
                            else array.dtype)
                return value.tensor
            return value
        if isinstance(arg, (list, tuple)):
            return type(arg)(self.get(a) for a in arg)
        return arg

    def raw(self, arg):
        """The import-time value of a constant node (torch tensors)."""
        import torch.fx as fx
        if isinstance(arg, fx.Node):
            return self.values[arg].value
        if isinstance(arg, (list, tuple)):
            return type(arg)(self.raw(a) for a in arg)
        if isinstance(arg, dict):
            return {k: self.raw(v) for k, v in arg.items()}
        return arg


def _constant_nodes(graph, signature, mutated):
    """Nodes whose values are known at import: unmutated buffers and lifted
    constants, and deterministic ops whose tensor inputs are all such."""
    import torch
    kinds = {spec.arg.name: spec for spec in signature.input_specs}
    known = set()
    for node in graph.nodes:
        if node.op == "placeholder":
            spec = kinds[node.name]
            if spec.kind.name in ("BUFFER", "CONSTANT_TENSOR") and \
                    spec.target not in mutated:
                known.add(node)
        elif node.op == "call_function":
            tags = getattr(node.target, "tags", ())
            if torch.Tag.nondeterministic_seeded in tags:
                continue
            if all(n in known for n in node.all_input_nodes) or \
                    _target_name(node.target) in _SHAPED_LIKE:
                known.add(node)
    return known


# Ops whose values do not depend on their tensor operand's values, only on
# its shape and dtype (x.new_zeros(...), torch.zeros_like(x)): known at
# import, folded from an example of the operand.
_SHAPED_LIKE = {"new_zeros.default", "new_ones.default", "new_full.default",
                "zeros_like.default", "ones_like.default", "full_like.default"}


def _folding_args(ctx, node):
    """A known node's arguments at import: constants' values; for the ops
    shaped like their operand, an example of its shape and dtype."""
    import torch
    args = node.args
    if _target_name(node.target) in _SHAPED_LIKE and \
            not getattr(args[0], "_zcc_known", False):
        val = args[0].meta["val"]
        return (torch.zeros(tuple(val.shape), dtype=val.dtype),) + \
            tuple(ctx.raw(args[1:]))
    return ctx.raw(args)


# Each handler: (ctx, node, *args) -> value; `why` (optional): a reason the
# node is not supported (args the handler does not take), else None.
_HANDLERS = {}
_WHY = {}


def _handles(*names, why=None):
    def register(fn):
        for name in names:
            _HANDLERS[name] = fn
            if why is not None:
                _WHY[name] = why
        return fn
    return register


def _is(x):
    return isinstance(x, Tensor)


def _kw(node, index, name, default):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


@_handles("linear.default")
def _linear(ctx, node):
    x, w = ctx.get(node.args[0]), ctx.get(node.args[1])
    b = ctx.get(_kw(node, 2, "bias", None))
    y = ops.matmul(x, w, transpose_b=True)
    return y + b if b is not None else y


@_handles("matmul.default", "mm.default", "bmm.default",
          why=lambda node: None if _ranks_match(node) else
          "batch dimensions that broadcast (only [.., M, K] @ [K, N] or equal batch dimensions)")
def _matmul(ctx, node):
    return ops.matmul(ctx.get(node.args[0]), ctx.get(node.args[1]))


def _ranks_match(node):
    a, b = (arg.meta.get("val") for arg in node.args[:2])
    if a is None or b is None:
        return True
    return b.dim() == 2 or (a.dim() == b.dim() and a.shape[:-2] == b.shape[:-2])


@_handles("addmm.default",
          why=lambda node: None if node.kwargs.get("beta", 1) == 1 and
          node.kwargs.get("alpha", 1) == 1 else "beta or alpha other than 1")
def _addmm(ctx, node):
    bias, a, b = (ctx.get(x) for x in node.args[:3])
    return ops.matmul(a, b) + bias


@_handles("baddbmm.default")
def _baddbmm(ctx, node):
    # beta * input + alpha * (batch1 @ batch2): BLOOM's ALiBi scores.
    bias, a, b = (ctx.get(x) for x in node.args[:3])
    beta = node.kwargs.get("beta", _kw(node, 3, "beta", 1))
    alpha = node.kwargs.get("alpha", _kw(node, 4, "alpha", 1))
    product = ops.matmul(a, b)
    if alpha != 1:
        product = product * alpha
    if beta == 0:  # PyTorch ignores input then (NaN and inf included)
        return product
    return product + (bias if beta == 1 else bias * beta)


@_handles("t.default", "numpy_T.default")
def _t(ctx, node):
    x = ctx.get(node.args[0])
    return x if x.ndim < 2 else ops.transpose(x, list(reversed(range(x.ndim))))


def _binary(fn):
    def handler(ctx, node):
        a, b = ctx.get(node.args[0]), ctx.get(node.args[1])
        alpha = node.kwargs.get("alpha", 1)
        if alpha != 1:
            b = b * alpha
        return fn(a, b)
    return handler


def _rotate_half_source(node):
    """x where `node` is `cat([-x[..., D/2:], x[..., :D/2]], -1)` (Llama's
    rotate_half; D even), else None."""
    if not _called(node, "cat.default") or len(node.args[0]) != 2:
        return None
    negated, first = node.args[0]
    if not _called(negated, "neg.default"):
        return None
    second = negated.args[0]
    if not (_called(first, "slice.Tensor") and _called(second, "slice.Tensor")):
        return None
    x = first.args[0]
    xv = getattr(x, "meta", {}).get("val")
    if second.args[0] is not x or xv is None or xv.dim() < 1:
        return None
    rank, width = xv.dim(), xv.shape[-1]
    if width % 2 or _kw(node, 1, "dim", 0) % rank != rank - 1:
        return None
    half = width // 2

    def takes(s, start, end):
        return (_kw(s, 1, "dim", 0) % rank == rank - 1
                and (_kw(s, 2, "start", None) or 0) == start
                and min(_kw(s, 3, "end", None) or width, width) == end
                and _kw(s, 4, "step", 1) == 1)
    return x if takes(first, 0, half) and takes(second, half, width) else None


def _rotary_parts(node):
    """(x, cos, sin) where `node` is rotary position embeddings written out
    in aten ops, `x * cos + rotate_half(x) * sin` (transformers' Llama,
    Qwen2 and Mistral apply_rotary_pos_emb; either order of the sum and of
    each product; cos and sin of x's dtype, broadcast to x's shape), else
    None: one zt.rotary instead of six launches forward and eight in the
    backward, reading the heads where the projection put them."""
    if (not _called(node, "add.Tensor") or len(node.args) != 2
            or node.kwargs.get("alpha", 1) != 1):
        return None
    yv = node.meta.get("val")
    for plain, rotated in (node.args, node.args[::-1]):
        if not (_called(plain, "mul.Tensor") and _called(rotated, "mul.Tensor")):
            continue
        for half, sin in (rotated.args, rotated.args[::-1]):
            x = _rotate_half_source(half)
            if x is None or x not in plain.args:
                continue
            cos = plain.args[1] if plain.args[0] is x else plain.args[0]
            xv = x.meta["val"]
            values = [getattr(v, "meta", {}).get("val") for v in (cos, sin)]
            if (yv is not None and tuple(yv.shape) == tuple(xv.shape)
                    and all(v is not None and v.dtype == xv.dtype
                            for v in values)):
                return x, cos, sin
    return None


def _add(ctx, node):
    parts = _rotary_parts(node)
    if parts is not None:
        x, cos, sin = (ctx.get(v) for v in parts)
        return ops.rotary(x, cos, sin)
    return _binary(operator.add)(ctx, node)


_handles("add.Tensor", "add.Scalar")(_add)
_handles("sub.Tensor", "sub.Scalar", "rsub.Scalar")(
    _binary(operator.sub))
def _float_cast_source(node):
    """The value a chain of casts to float32 of a float32 value reads (the
    `.to(torch.float32)` an RMSNorm written out states), else `node`."""
    import torch
    import torch.fx as fx
    while (isinstance(node, fx.Node) and node.op == "call_function"
           and _target_name(node.target) in ("to.dtype", "_to_copy.default")
           and _target_dtype(node) == torch.float32
           and isinstance(node.args[0], fx.Node)
           and getattr(node.args[0].meta.get("val"), "dtype", None)
           == torch.float32):
        node = node.args[0]
    return node


def _called(node, *names):
    import torch.fx as fx
    return (isinstance(node, fx.Node) and node.op == "call_function"
            and _target_name(node.target) in names)


def _rms_norm_parts(node):
    """(x, weight, eps) where `node` is an RMSNorm written out in aten ops,
    `weight * (x * rsqrt(mean(x^2, -1, keepdim) + eps))` (transformers'
    Llama, Qwen2 and Mistral RMSNorm; either operand order, casts to float32
    of float32 values between), else None: one zt.rms_norm instead of six
    launches forward and more in the backward."""
    import torch
    if not _called(node, "mul.Tensor") or len(node.args) != 2:
        return None
    for weight, scaled in (node.args, node.args[::-1]):
        scaled = _float_cast_source(scaled)
        w = getattr(weight, "meta", {}).get("val")
        if w is None or w.dim() != 1 or not _called(scaled, "mul.Tensor"):
            continue
        for x, r in (scaled.args, scaled.args[::-1]):
            if not _called(r, "rsqrt.default") or not _called(
                    r.args[0], "add.Tensor", "add.Scalar"):
                continue
            mean, eps = r.args[0].args[:2]
            if (not isinstance(eps, (int, float)) or not _called(mean, "mean.dim")
                    or not _called(mean.args[0], "pow.Tensor_Scalar")):
                continue
            square = mean.args[0]
            xv = getattr(x, "meta", {}).get("val")
            dims = list(mean.args[1]) if len(mean.args) > 1 else []
            keep = _kw(mean, 2, "keepdim", False)
            if (square.args[0] is x and square.args[1] == 2 and xv is not None
                    and xv.dtype == torch.float32 and xv.dim() >= 1
                    and dims in ([-1], [xv.dim() - 1]) and keep
                    and tuple(w.shape) == (xv.shape[-1],)
                    and w.dtype == torch.float32):
                return x, weight, float(eps)
    return None


def _mul(ctx, node):
    parts = _rms_norm_parts(node)
    if parts is not None:
        x, weight, eps = parts
        return ops.rms_norm(ctx.get(x), ctx.get(weight), eps)
    return _binary(operator.mul)(ctx, node)


_handles("mul.Tensor", "mul.Scalar")(_mul)
_handles("div.Tensor", "div.Scalar",
         why=lambda node: "rounding_mode" if node.kwargs.get("rounding_mode")
         else None)(_binary(operator.truediv))
_HANDLERS["rsub.Scalar"] = lambda ctx, node: (
    ctx.get(node.args[1]) - ctx.get(node.args[0]))


def _row_arguments(node, tensors, params):
    """An element row's params from an ATen call: the schema's arguments
    after its `tensors` operands, in order (None: the row's default, an open
    bound); any further argument must keep its default. (values, problem)."""
    schema = node.target._schema
    values, problem = [], None
    for k, arg in enumerate(schema.arguments[tensors:]):
        i = tensors + k
        value = node.args[i] if len(node.args) > i else \
            node.kwargs.get(arg.name, arg.default_value)
        if k < len(params):
            values.append(params[k][1] if value is None else value)
        elif value != arg.default_value:
            problem = f"{arg.name}={value!r} (only {arg.default_value!r})"
    return values, problem


def _element_row(name, tensors, params):
    def handler(ctx, node):
        operands = [ctx.get(a) for a in node.args[:tensors]]
        return getattr(ops, name)(*operands,
                                  *_row_arguments(node, tensors, params)[0])
    return handler


# The element ops' rows name the ATen overloads they take (ElementKernels.h).
_OPERANDS = {"unary": 1, "bool_unary": 1, "select": 3}
for _name, (_row, _arity, _params, _torch) in ops._ROWS.items():
    _tensors = _OPERANDS.get(_arity, 2)
    _handles(*_torch.split(), why=lambda node, t=_tensors, p=_params:
             _row_arguments(node, t, p)[1])(_element_row(_name, _tensors, _params))


@_handles("gelu.default")
def _gelu(ctx, node):
    return ops.gelu(ctx.get(node.args[0]),
                    node.kwargs.get("approximate", _kw(node, 1, "approximate", "none")))


@_handles("pow.Tensor_Scalar")
def _pow(ctx, node):
    """Squares and square roots as the ops they are (no pow kernel); any
    other exponent is zt.pow."""
    x, e = ctx.get(node.args[0]), node.args[1]
    special = {1: lambda: x, 2: lambda: x * x, 0.5: lambda: ops.sqrt(x),
               -0.5: lambda: ops.rsqrt(x)}
    return special[e]() if e in special else ops.pow(x, e)


@_handles("square.default")
def _square(ctx, node):
    x = ctx.get(node.args[0])
    return x * x


@_handles("view.default", "reshape.default", "_unsafe_view.default")
def _view(ctx, node):
    return ops.reshape(ctx.get(node.args[0]), [int(d) for d in node.args[1]])


@_handles("flatten.using_ints")
def _flatten(ctx, node):
    x = ctx.get(node.args[0])
    start = _kw(node, 1, "start_dim", 0) % max(x.ndim, 1)
    end = _kw(node, 2, "end_dim", -1) % max(x.ndim, 1)
    shape = list(x.shape)
    return ops.reshape(x, shape[:start] + [-1] + shape[end + 1:])


@_handles("unflatten.int")
def _unflatten(ctx, node):
    x = ctx.get(node.args[0])
    dim = node.args[1] % x.ndim
    shape = list(x.shape)
    return ops.reshape(x, shape[:dim] + [int(n) for n in node.args[2]]
                       + shape[dim + 1:])


@_handles("unsqueeze.default")
def _unsqueeze(ctx, node):
    x = ctx.get(node.args[0])
    dim = node.args[1] % (x.ndim + 1)
    shape = list(x.shape)
    return ops.reshape(x, shape[:dim] + [1] + shape[dim:])


@_handles("squeeze.dim", "squeeze.dims")
def _squeeze(ctx, node):
    x = ctx.get(node.args[0])
    dims = node.args[1] if isinstance(node.args[1], (list, tuple)) else [node.args[1]]
    dims = {d % x.ndim for d in dims if x.shape[d % x.ndim] == 1}
    return ops.reshape(x, [n for d, n in enumerate(x.shape) if d not in dims])


@_handles("permute.default")
def _permute(ctx, node):
    return ops.transpose(ctx.get(node.args[0]), list(node.args[1]))


@_handles("transpose.int")
def _transpose(ctx, node):
    return ops.swapaxes(ctx.get(node.args[0]), node.args[1], node.args[2])


@_handles("expand.default")
def _expand(ctx, node):
    x = ctx.get(node.args[0])
    shape = list(node.args[1])
    offset = len(shape) - x.ndim
    shape = [x.shape[i - offset] if s == -1 else s for i, s in enumerate(shape)]
    return ops.broadcast_to(x, shape)


def _pad_why(node):
    mode = _kw(node, 2, "mode", "constant")
    return None if mode == "constant" else f"mode '{mode}'"


@_handles("pad.default", "constant_pad_nd.default", why=_pad_why)
def _pad(ctx, node):
    # Constant padding (F.pad's pairs from the last dimension back): the
    # value concatenated on each side; negative amounts cut (a slice).
    x = ctx.get(node.args[0])
    pads = list(node.args[1])
    target = _target_name(node.target)
    value = _kw(node, 2, "value", 0.0) if target == "constant_pad_nd.default" \
        else _kw(node, 3, "value", None)
    value = 0.0 if value is None else float(value)
    for i in range(len(pads) // 2):
        dim = x.ndim - 1 - i
        before, after = pads[2 * i], pads[2 * i + 1]
        if before < 0 or after < 0:
            x = ops.slice_dim(x, dim, max(-before, 0),
                              x.shape[dim] - max(-after, 0))
            before, after = max(before, 0), max(after, 0)
        parts = []
        for amount in (before, None, after):
            if amount is None:
                parts.append(x)
            elif amount:
                shape = list(x.shape)
                shape[dim] = amount
                parts.append(ops.full(shape, value, x.dtype))
        if len(parts) > 1:
            x = ops.concat(parts, dim)
    return x


def _einsum_why(node):
    equation = node.args[0].replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    if "." in equation:
        return "an ellipsis ('...') in the equation"
    if not arrow:
        return "an equation without '->'"
    if any(len(set(t)) != len(t) for t in inputs.split(",") + [output]):
        return "a letter repeated within one operand (a diagonal)"
    sizes = {}
    for letters, operand in zip(inputs.split(","), node.args[1]):
        for c, n in zip(letters, _shape_of(operand) or ()):
            if sizes.setdefault(c, n) != n:
                return f"letter '{c}' of sizes {sizes[c]} and {n} (broadcast)"
    return None


def _sum_out(x, letters, keep):
    """x (its dimensions named by `letters`) summed over those not kept."""
    gone = [d for d, c in enumerate(letters) if c not in keep]
    if gone:
        x = ops.sum(x, gone)
        letters = "".join(c for d, c in enumerate(letters) if d not in gone)
    return x, letters


def _einsum_pair(a, la, b, lb, keep):
    """The product of a (letters la) and b (lb) over the letters in both
    that `keep` does not hold; letters of one operand alone that `keep`
    does not hold are summed first. Returns (result, its letters): batch
    letters, then a's, then b's."""
    a, la = _sum_out(a, la, set(lb) | keep)
    b, lb = _sum_out(b, lb, set(la) | keep)
    batch = [c for c in la if c in lb and c in keep]
    contracted = [c for c in la if c in lb and c not in keep]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]
    size = {c: n for c, n in zip(la, a.shape)}
    size.update(zip(lb, b.shape))

    def arrange(x, lx, order, shape):
        perm = [lx.index(c) for c in order]
        if perm != list(range(len(perm))):
            x = ops.transpose(x, perm)
        return ops.reshape(x, shape)

    count = lambda letters: int(np.prod([size[c] for c in letters],  # noqa: E731
                                        dtype=np.int64))
    nb, m, k, n = count(batch), count(left), count(contracted), count(right)
    lhs = arrange(a, la, batch + left + contracted, [nb, m, k])
    rhs = arrange(b, lb, batch + contracted + right, [nb, k, n])
    letters = batch + left + right
    y = ops.matmul(lhs, rhs)
    return ops.reshape(y, [size[c] for c in letters]), "".join(letters)


@_handles("einsum.default", why=_einsum_why)
def _einsum(ctx, node):
    # Pairwise products as batched matmuls (transposes and reshapes around
    # them), left to right; sums over letters that leave.
    inputs, _, output = node.args[0].replace(" ", "").partition("->")
    operands = list(ctx.get(node.args[1]))
    letters = inputs.split(",")
    x, lx = operands[0], letters[0]
    for i in range(1, len(operands)):
        keep = set(output).union(*letters[i + 1:])
        x, lx = _einsum_pair(x, lx, operands[i], letters[i], keep)
    x, lx = _sum_out(x, lx, set(output))
    perm = [lx.index(c) for c in output]
    return ops.transpose(x, perm) if perm != list(range(len(perm))) else x


@_handles("roll.default", why=lambda node: None if _kw(node, 2, "dims", [])
          else "no dims (a roll of the flattened tensor)")
def _roll(ctx, node):
    # Each dimension's roll: its last `shift` positions moved to the front
    # (a slice and a concatenation).
    x = ctx.get(node.args[0])
    shifts, dims = node.args[1], _kw(node, 2, "dims", [])
    shifts = list(shifts) if isinstance(shifts, (list, tuple)) else [shifts]
    dims = list(dims) if isinstance(dims, (list, tuple)) else [dims]
    for shift, dim in zip(shifts, dims):
        dim %= x.ndim
        size = x.shape[dim]
        shift %= size
        if shift:
            x = ops.concat([ops.slice_dim(x, dim, size - shift, size),
                            ops.slice_dim(x, dim, 0, size - shift)], dim)
    return x


@_handles("repeat.default")
def _repeat(ctx, node):
    # Tiled copies: each dimension s repeated r times is [r, s] broadcast
    # from [1, s], then merged.
    x = ctx.get(node.args[0])
    reps = list(node.args[1])
    shape = [1] * (len(reps) - x.ndim) + list(x.shape)
    split = [n for s in shape for n in (1, s)]
    tiled = [n for r, s in zip(reps, shape) for n in (r, s)]
    y = ops.broadcast_to(ops.reshape(x, split), tiled)
    return ops.reshape(y, [r * s for r, s in zip(reps, shape)])


@_handles("broadcast_tensors.default")
def _broadcast_tensors(ctx, node):
    tensors = ctx.get(node.args[0])
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return [ops.broadcast_to(t, shape) for t in tensors]


@_handles("contiguous.default", "clone.default", "alias.default",
          "lift_fresh_copy.default")
def _identity(ctx, node):
    return ctx.get(node.args[0])


@_handles("_assert_tensor_metadata.default")
def _assert_metadata(ctx, node):
    # A check export records of what the traced tensor was: it holds by
    # construction (the plan's tensors have the traced dtypes and shapes).
    return None


def _dtype_change(node):
    """The dtype a to/_to_copy node converts to, when it is not its
    operand's; None when it keeps it (or states none)."""
    dtype = _target_dtype(node)
    source = node.args[0].meta.get("val") if hasattr(node.args[0], "meta") else None
    if dtype is None or source is None or dtype == source.dtype:
        return None
    return f"{source.dtype} to {dtype}".replace("torch.", "")


def _target_dtype(node):
    """The dtype a to/_to_copy node states, or None."""
    dtype = node.kwargs.get("dtype")
    name = _target_name(node.target)
    if dtype is None and name == "to.dtype" and len(node.args) > 1:
        dtype = node.args[1]
    if dtype is None and name == "to.device" and len(node.args) > 2:
        dtype = node.args[2]
    return dtype


def _zcc_dtype(dtype):
    """zcc's name of a torch dtype a plan holds (float32, int32, int64,
    bool), or None."""
    import torch
    return {torch.float32: "float32", torch.int32: "int32",
            torch.int64: "int64", torch.bool: "bool"}.get(dtype)


def _dtype_change_why(node):
    import torch
    if _target_dtype(node) == torch.bool:
        return None  # x != 0, from any dtype
    change = _dtype_change(node)
    source = node.args[0].meta.get("val") if hasattr(node.args[0], "meta") \
        else None
    if change is None or (source is not None and
                          _zcc_dtype(source.dtype) is not None and
                          _zcc_dtype(_target_dtype(node)) is not None):
        return None  # the same dtype, or between f32, i32, i64 and bool
    return "converts " + change


@_handles("to.dtype", "to.dtype_layout", "to.device", "_to_copy.default",
          why=_dtype_change_why)
def _to(ctx, node):
    import torch
    x = ctx.get(node.args[0])
    target = _target_dtype(node)
    if target == torch.bool and x.dtype != "bool":
        return ops.ne(x, 0)  # PyTorch's cast: true where nonzero
    if target is not None and _zcc_dtype(target) not in (None, x.dtype):
        return ops.convert(x, _zcc_dtype(target))
    # The same dtype on the same device: the tensor itself.
    return x


@_handles("type_as.default", why=lambda node: None if _zcc_dtype(
    node.args[1].meta["val"].dtype) else "a dtype a plan does not hold")
def _type_as(ctx, node):
    x = ctx.get(node.args[0])
    return ops.convert(x, _zcc_dtype(node.args[1].meta["val"].dtype))


@_handles("slice.Tensor")
def _slice(ctx, node):
    x = ctx.get(node.args[0])
    dim = _kw(node, 1, "dim", 0)
    start = _kw(node, 2, "start", None)
    end = _kw(node, 3, "end", None)
    step = _kw(node, 4, "step", 1)
    size = x.shape[dim]
    if step != 1:  # every step-th position (zt.slice's strides)
        return ops.getitem(x, (slice(None),) * (dim % x.ndim) +
                           (slice(start, end, step),))
    return ops.slice_dim(x, dim, 0 if start is None else start,
                         size if end is None else min(end, size))


@_handles("select.int")
def _select(ctx, node):
    x, dim, index = ctx.get(node.args[0]), node.args[1], node.args[2]
    dim %= x.ndim
    index %= x.shape[dim]
    y = ops.slice_dim(x, dim, index, index + 1)
    return ops.reshape(y, [n for d, n in enumerate(y.shape) if d != dim])


@_handles("unbind.int")
def _unbind(ctx, node):
    x = ctx.get(node.args[0])
    dim = _kw(node, 1, "dim", 0) % x.ndim
    rest = [n for d, n in enumerate(x.shape) if d != dim]
    return [ops.reshape(ops.slice_dim(x, dim, i, i + 1), rest)
            for i in range(x.shape[dim])]


def _conv_args(node, dims):
    """(stride, padding, dilation, groups) of a conv1d/conv2d node, each
    spatial argument `dims` numbers; padding "valid" is 0 and "same" the
    symmetric padding that keeps the size (None when it cannot be)."""
    weight = node.args[1].meta.get("val")
    stride = _numbers(_kw(node, 3, "stride", 1), dims)
    dilation = _numbers(_kw(node, 5, "dilation", 1), dims)
    padding = _kw(node, 4, "padding", 0)
    if padding == "valid":
        padding = [0] * dims
    elif padding == "same":
        total = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
        if any(t % 2 for t in total):
            return None
        padding = [t // 2 for t in total]
    return stride, _numbers(padding, dims), dilation, _kw(node, 6, "groups", 1)


def _numbers(value, count, default=None):
    """A spatial argument as `count` numbers: one number repeated, or the
    list; `default` for None or an empty list (max_pool2d's stride)."""
    if value is None or (isinstance(value, (list, tuple)) and not value):
        value = default
    value = list(value) if isinstance(value, (list, tuple)) else [value]
    return value * (count // len(value))


def _conv_why(node):
    weight = node.args[1].meta.get("val")
    if weight is None:
        return "a weight of unknown shape"
    if _conv_args(node, weight.dim() - 2) is None:
        return "padding='same' that is not symmetric (an even dilated kernel)"
    return None


def _patches(x, w, stride, padding, dilation, groups):
    """Whether the convolution reads non-overlapping patches: one product."""
    return tuple(stride) == tuple(w.shape[2:]) and not any(padding) and \
        tuple(dilation) == (1, 1) and groups == 1


@_handles("conv2d.default", "conv2d.padding", "conv1d.default",
          "conv1d.padding", why=_conv_why)
def _conv(ctx, node):
    x, w = ctx.get(node.args[0]), ctx.get(node.args[1])
    bias = _kw(node, 2, "bias", None)
    dims = w.ndim - 2
    stride, padding, dilation, groups = _conv_args(node, dims)
    if dims == 1:  # a row of height 1
        x = ops.reshape(x, [x.shape[0], x.shape[1], 1, x.shape[2]])
        w = ops.reshape(w, [w.shape[0], w.shape[1], 1, w.shape[2]])
        stride, padding, dilation = [1] + stride, [0] + padding, [1] + dilation
    if _patches(x, w, stride, padding, dilation, groups):
        y = _conv2d_patches(x, w)
    else:
        y = ops.conv2d(x, w, stride=stride, padding=padding,
                       dilation=dilation, groups=groups)
    if bias is not None:
        y = y + ops.reshape(ctx.get(bias), [w.shape[0], 1, 1])
    return ops.reshape(y, list(y.shape[:2]) + [y.shape[3]]) if dims == 1 else y


def _tiles(x, kh, kw):
    """x [..., H, W] as [..., rows, kh, cols, kw]: its kh x kw windows side
    by side, the rows and columns that no whole window covers left out."""
    *lead, height, width = x.shape
    rows, cols = height // kh, width // kw
    if rows * kh != height or cols * kw != width:
        x = ops.slice_dim(ops.slice_dim(x, x.ndim - 2, 0, rows * kh),
                          x.ndim - 1, 0, cols * kw)
    return ops.reshape(x, lead + [rows, kh, cols, kw])


def _conv2d_patches(x, w):
    # A patch embedding (ViT's): each output pixel reads its own kh x kw
    # patch, so the convolution is one product of the patches, laid out as
    # rows, with the weight as [O, C kh kw]; the same sums in the same order
    # as a convolution's per pixel.
    batch, channels = x.shape[:2]
    out, _, kh, kw = w.shape
    rows, cols = x.shape[2] // kh, x.shape[3] // kw
    if kh == kw == 1:
        # A pointwise convolution reads x [N, C, HW] transposed in the
        # product itself: no copy of it, and none kept for the backward.
        y = ops.matmul(ops.reshape(x, [batch, channels, rows * cols]),
                       ops.reshape(w, [out, channels]), transpose_a=True,
                       transpose_b=True)
        return ops.reshape(ops.transpose(y, [0, 2, 1]),
                           [batch, out, rows, cols])
    patches = ops.reshape(
        ops.transpose(_tiles(x, kh, kw), [0, 2, 4, 1, 3, 5]),
        [batch, rows * cols, channels * kh * kw])
    y = ops.matmul(patches, ops.reshape(w, [out, channels * kh * kw]),
                   transpose_b=True)
    return ops.transpose(ops.reshape(y, [batch, rows, cols, out]), [0, 3, 1, 2])


def _is_float(node):
    val = node.meta.get("val") if hasattr(node, "meta") else None
    return val is not None and val.dtype.is_floating_point


def _is_integer_index(node):
    val = node.meta.get("val") if hasattr(node, "meta") else None
    return val is not None and not val.dtype.is_floating_point and \
        not val.dtype.is_complex and str(val.dtype) != "torch.bool"


def _index_why(node):
    indices = node.args[1]
    tensors = [i for i in indices if i is not None]
    if any(not _is_integer_index(i) for i in tensors):
        return "a bool mask index (a result shaped by the data)"
    if len(tensors) == 1 and _is_float(node.args[0]):
        return None  # a gather along one dimension (zt.embedding)
    if any(i is None for i in indices):
        return "None among several index tensors"
    if not getattr(node, "_zcc_known_indices", False):
        return ("indices computed from data into an integer or bool tensor"
                if len(tensors) == 1 else
                "several index tensors computed from data")
    return None


def _take(x, dim, index):
    """x[..., index, ...] with `index` (an integer zcc tensor) along `dim`:
    x's dimension `dim` moved first and the rest flattened, the rows read by
    zt.embedding (whose gradient adds each row's gradients back, repeated
    indices included), then the index's dimensions placed at `dim`."""
    shape = list(x.shape)
    before, after = shape[:dim], shape[dim + 1:]
    if dim:
        x = ops.transpose(x, [dim] + list(range(dim)) +
                          list(range(dim + 1, len(shape))))
    width = int(np.prod(before + after, dtype=np.int64))
    rows = ops.embedding(ops.reshape(x, [shape[dim], width]), index)
    k = len(index.shape)
    y = ops.reshape(rows, list(index.shape) + before + after)
    if dim:
        y = ops.transpose(y, list(range(k, k + dim)) + list(range(k)) +
                          list(range(k + dim, k + dim + len(after))))
    return y


def _index_tensor(ctx, arg, size):
    """An index tensor for _take: constant positions as an i32 constant
    (negative ones counted from the end, as PyTorch's; out of range is an
    import error), or the zcc tensor of one computed from data."""
    if not getattr(arg, "_zcc_known", False):
        return ctx.get(arg)
    values = ctx.raw(arg).detach().cpu().numpy().astype(np.int64)
    if values.size and (values.min() < -size or values.max() >= size):
        raise Error(f"from_torch: index {int(values.min())}..{int(values.max())}"
                    f" out of range for a dimension of size {size}")
    return ops.constant((values % max(size, 1)).astype(np.int32), "int32")


def _index_plan(x_shape, indices):
    """How x[indices] (constant index tensors, one per leading dimension)
    reads x, when every index tensor is a run of consecutive positions along
    one dimension of the broadcast result, or one position: per indexed
    dimension (start, size, result axis or None), and the result's shape.
    None when the indices are another pattern (a real gather)."""
    result = np.broadcast_shapes(*(i.shape for i in indices))
    plan, taken = [], set()
    for d, index in enumerate(indices):
        size = x_shape[d]
        values = np.broadcast_to(index, result) % max(size, 1)
        shape = (1,) * (len(result) - index.ndim) + index.shape
        axes = [a for a, n in enumerate(shape) if n != 1]
        if not axes:
            plan.append((int(values.reshape(-1)[0]), 1, None))
            continue
        if len(axes) != 1 or axes[0] in taken:
            return None
        axis = axes[0]
        run = np.moveaxis(values, axis, 0).reshape(result[axis], -1)[:, 0]
        start = int(run[0])
        if not np.array_equal(run, np.arange(start, start + len(run))):
            return None
        taken.add(axis)
        plan.append((start, len(run), axis))
    return plan, tuple(result)


def _gather_why(node):
    x = node.args[0]
    if _kw(node, 3, "sparse_grad", False):
        return "sparse_grad"
    if not _is_float(x) and not getattr(x, "_zcc_known", False):
        return "a gather from integer or bool data"
    return None


def _float_table(ctx, node):
    """A gather's source as a float zcc tensor and its own dtype: float as
    it is; an integer or bool constant known at import converted to f32
    (checked exact: its values within 2^24)."""
    x = ctx.get(node)
    if x.dtype == "float32":
        return x, x.dtype
    values = ctx.raw(node).detach().cpu().numpy()
    if values.size and np.abs(values.astype(np.float64)).max() >= 2 ** 24:
        raise Error(f"from_torch: {_where_of(node)}: a gather from integer "
                    "values beyond 2^24, which f32 rows do not hold exactly")
    return ops.convert(x, "float32"), x.dtype


@_handles("gather.default", why=_gather_why)
def _gather(ctx, node):
    # torch.gather: out[..., j, ...] = x[..., index[..., j, ...], ...] along
    # dim. The dimension moved last and everything flattened, each index
    # offset by its line's start: one zt.embedding of x's elements (its
    # gradient adds repeated positions back). An index outside [0, size) is
    # sent to -1, so the lookup reports it instead of reading another line.
    table, dtype = _float_table(ctx, node.args[0])
    rank = table.ndim
    dim = node.args[1] % rank
    index_node = node.args[2]
    index = _index_tensor(ctx, index_node, table.shape[dim])
    if index.ndim != rank:
        raise Error(f"from_torch: {_where_of(node)}: gather's index must have "
                    "the source's rank")
    for d in range(rank):
        if d != dim and index.shape[d] < table.shape[d]:
            table = ops.slice_dim(table, d, 0, index.shape[d])
        elif d != dim and index.shape[d] > table.shape[d]:
            raise Error(f"from_torch: {_where_of(node)}: gather's index is "
                        "larger than the source outside the gathered "
                        "dimension")
    perm = [d for d in range(rank) if d != dim] + [dim]
    moved = perm != list(range(rank))
    if moved:
        table, index = ops.transpose(table, perm), ops.transpose(index, perm)
    lines = list(index.shape[:-1])
    n, count = table.shape[-1], int(np.prod(lines, dtype=np.int64))
    wide = count * n >= 2 ** 31 or index.dtype == "int64"
    kind = "int64" if wide else "int32"
    index = ops.convert(index, kind)
    starts = ops.constant((np.arange(count, dtype=np.int64) * n).reshape(
        lines + [1]).astype(np.int64 if wide else np.int32), kind)
    inside = ops.logical_and(ops.ge(index, ops.full([], 0, kind)),
                             ops.lt(index, ops.full([], n, kind)))
    flat = ops.where(inside, index + starts,
                     ops.full(list(index.shape), -1, kind))
    rows = ops.embedding(ops.reshape(table, [count * n, 1]), flat)
    y = ops.reshape(rows, list(index.shape))
    if moved:
        y = ops.transpose(y, [perm.index(d) for d in range(rank)])
    return y if dtype == "float32" else ops.convert(y, dtype)


@_handles("index_select.default", why=lambda node: None if _is_float(
    node.args[0]) else "a bool or integer tensor (a gather zcc has no kernel for)")
def _index_select(ctx, node):
    x = ctx.get(node.args[0])
    dim = node.args[1] % x.ndim
    return _take(x, dim, _index_tensor(ctx, node.args[2], x.shape[dim]))


@_handles("index.Tensor", why=_index_why)
def _index(ctx, node):
    # Constant indices that read runs of x (transformers' padding mask,
    # mask[batch_arange, key_arange] broadcast): slices, a transpose and a
    # broadcast, no gather.
    x = ctx.get(node.args[0])
    planned = None
    if getattr(node, "_zcc_known_indices", False) and \
            all(i is not None for i in node.args[1]):
        indices = [ctx.raw(i).detach().cpu().numpy() for i in node.args[1]]
        planned = _index_plan(tuple(x.shape), indices)
    tensors = [d for d, i in enumerate(node.args[1]) if i is not None]
    if planned is None and (len(tensors) != 1 or not _is_float(node.args[0])):
        raise Error(f"from_torch: {_where_of(node)}: index.Tensor with "
                    "constant indices that are not runs of positions, into "
                    "a bool or integer tensor or with several index tensors "
                    "(a gather zcc has no kernel for), is not supported")
    if planned is None:
        # A gather along one dimension: constant positions or from data.
        dim = tensors[0]
        return _take(x, dim, _index_tensor(ctx, node.args[1][dim],
                                           x.shape[dim]))
    plan, result = planned
    k = len(plan)
    for d, (start, size, _) in enumerate(plan):
        if (start, size) != (0, x.shape[d]):
            x = ops.slice_dim(x, d, start, start + size)
    # The indexed dimensions in the order of their result axes, the
    # single positions dropped; then each placed at its axis.
    order = sorted((axis, d) for d, (_, _, axis) in enumerate(plan)
                   if axis is not None)
    rest = list(range(k, x.ndim))
    perm = [d for _, d in order] + [d for d, p in enumerate(plan)
                                    if p[2] is None] + rest
    if perm != list(range(x.ndim)):
        x = ops.transpose(x, perm)
    placed = [1] * len(result)
    for axis, d in order:
        placed[axis] = x.shape[perm.index(d)]
    rest_shape = [x.shape[perm.index(d)] for d in rest]
    x = ops.reshape(x, placed + rest_shape)
    target = list(result) + rest_shape
    return x if list(x.shape) == target else ops.broadcast_to(x, target)


def _pool_args(node):
    """max_pool2d's (kernel, stride, padding, dilation), two numbers each."""
    kernel = _numbers(node.args[1], 2)
    return (kernel, _numbers(_kw(node, 2, "stride", None), 2, kernel),
            _numbers(_kw(node, 3, "padding", 0), 2),
            _numbers(_kw(node, 4, "dilation", 1), 2))


@_handles("max_pool2d.default")
def _max_pool2d(ctx, node):
    kernel, stride, padding, dilation = _pool_args(node)
    return ops.max_pool2d(ctx.get(node.args[0]), kernel_size=kernel,
                          stride=stride, padding=padding, dilation=dilation,
                          ceil_mode=bool(_kw(node, 5, "ceil_mode", False)))


def _avg_pool_why(node):
    if _kw(node, 4, "ceil_mode", False):
        return "ceil_mode=True"
    if _kw(node, 6, "divisor_override", None) is not None:
        return "divisor_override"
    if not _kw(node, 5, "count_include_pad", True) and \
            any(_numbers(_kw(node, 3, "padding", 0), 2)):
        return "count_include_pad=False with padding"
    return None


@_handles("avg_pool2d.default", why=_avg_pool_why)
def _avg_pool2d(ctx, node):
    x = ctx.get(node.args[0])
    kernel = _numbers(node.args[1], 2)
    stride = _numbers(_kw(node, 2, "stride", None), 2, kernel)
    padding = _numbers(_kw(node, 3, "padding", 0), 2)
    channels = x.shape[1]
    if stride == kernel and not any(padding):
        # Windows side by side (DenseNet's transitions): a mean per window.
        return ops.mean(_tiles(x, *kernel), [3, 5])
    # Overlapping or padded: each channel's window sums (a depthwise
    # convolution with ones; the padding counts, as PyTorch's default), then
    # divided by the window's size.
    ones = ops.constant(np.ones([channels, 1] + kernel, np.float32))
    sums = ops.conv2d(x, ones, stride=stride, padding=padding,
                      dilation=[1, 1], groups=channels)
    return sums / float(kernel[0] * kernel[1])


def _adaptive_why(node):
    x = node.args[0].meta.get("val")
    size = list(node.args[1]) if isinstance(node.args[1], (list, tuple)) \
        else [node.args[1]] * 2
    if x is None or any(s is None for s in size) or \
            any(int(n) % int(s) for n, s in zip(x.shape[-2:], size)):
        return "output sizes that do not divide the input's (unequal bins)"
    return None


@_handles("adaptive_avg_pool2d.default", "_adaptive_avg_pool2d.default",
          why=_adaptive_why)
def _adaptive_avg_pool2d(ctx, node):
    # Equal bins: a mean over each bin (a global average pool is the mean
    # over the plane).
    x = ctx.get(node.args[0])
    size = list(node.args[1]) if isinstance(node.args[1], (list, tuple)) \
        else [node.args[1]] * 2
    height, width = x.shape[-2:]
    rank = x.ndim - 2
    bins = _tiles(x, height // int(size[0]), width // int(size[1]))
    return ops.mean(bins, [rank + 1, rank + 3])


@_handles("split.Tensor")
def _split(ctx, node):
    x = ctx.get(node.args[0])
    return ops.split(x, node.args[1], _kw(node, 2, "dim", 0))


@_handles("split_with_sizes.default")
def _split_sizes(ctx, node):
    x, sizes = ctx.get(node.args[0]), node.args[1]
    dim = _kw(node, 2, "dim", 0)
    pieces, start = [], 0
    for size in sizes:
        pieces.append(ops.slice_dim(x, dim, start, start + size))
        start += size
    return pieces


@_handles("chunk.default")
def _chunk(ctx, node):
    x, chunks = ctx.get(node.args[0]), node.args[1]
    dim = _kw(node, 2, "dim", 0)
    size = -(-x.shape[dim] // chunks)
    return ops.split(x, size, dim)


@_handles("cat.default")
def _cat(ctx, node):
    # torch.cat skips empty parts (a key-value cache's first, empty state):
    # they hold nothing, and a plan holds no empty tensor.
    parts = [a for a in node.args[0]
             if not (hasattr(a, "meta") and "val" in a.meta
                     and a.meta["val"].numel() == 0)]
    if len(parts) == 1:
        return ctx.get(parts[0])
    return ops.concat([ctx.get(a) for a in parts], _kw(node, 1, "dim", 0))


def _layer_norm_why(node):
    shape = list(node.args[1])
    val = node.args[0].meta.get("val")
    if val is not None and len(shape) != 1:
        return "normalized_shape over more than the last dimension"
    return None


@_handles("layer_norm.default", why=_layer_norm_why)
def _layer_norm(ctx, node):
    x = ctx.get(node.args[0])
    weight = ctx.get(_kw(node, 2, "weight", None))
    bias = ctx.get(_kw(node, 3, "bias", None))
    eps = _kw(node, 4, "eps", 1e-5)
    width = x.shape[-1]
    if weight is None:
        weight = ops.full([width], 1.0)
    if bias is None:
        bias = ops.full([width], 0.0)
    return ops.layer_norm(x, weight, bias, eps)


@_handles("rms_norm.default")
def _rms_norm(ctx, node):
    x = ctx.get(node.args[0])
    weight = ctx.get(_kw(node, 2, "weight", None))
    eps = _kw(node, 3, "eps", None)
    if weight is None:
        weight = ops.full([x.shape[-1]], 1.0)
    return ops.rms_norm(x, weight, 1.1920928955078125e-07 if eps is None else eps)


@_handles("softmax.int", "_softmax.default")
def _softmax(ctx, node):
    return ops.softmax(ctx.get(node.args[0]), node.args[1])


@_handles("log_softmax.int", "_log_softmax.default")
def _log_softmax(ctx, node):
    return ops.log_softmax(ctx.get(node.args[0]), node.args[1])


def _cumsum_why(node):
    dtype = _kw(node, 2, "dtype", None)
    if dtype is not None and _zcc_dtype(dtype) in (None, "bool"):
        return "dtype"
    return None


@_handles("cumsum.default", why=_cumsum_why)
def _cumsum(ctx, node):
    # PyTorch sums integers and bools as int64 unless told a dtype.
    x = ctx.get(node.args[0])
    dtype = _kw(node, 2, "dtype", None)
    target = _zcc_dtype(dtype) if dtype is not None else \
        ("float32" if x.dtype == "float32" else "int64")
    return ops.cumsum(ops.convert(x, target), dim=node.args[1])


@_handles("embedding.default")
def _embedding(ctx, node):
    table, ids = ctx.get(node.args[0]), ctx.get(node.args[1])
    rows = ops.embedding(table, ids)
    pad = _kw(node, 2, "padding_idx", -1)
    if pad is None or pad < 0:
        return rows
    # PyTorch gives the padding row no gradient from the lookup (a tied
    # output layer's still reaches it).
    # At padding positions: the padding row, read without a gradient.
    padding = ops.stop_gradient(ops.slice_dim(table, 0, pad, pad + 1))
    keep = ops.ne(ids, pad)
    return ops.where(ops.reshape(keep, list(keep.shape) + [1]), rows, padding)


@_handles("dropout.default", "dropout_.default")
def _dropout(ctx, node):
    x, p = ctx.get(node.args[0]), node.args[1]
    train = _kw(node, 2, "train", True)
    return ops.dropout(x, p if train else 0.0)


def _bernoulli_why(node):
    p = _kw(node, 1, "p", 0.5)
    if not isinstance(p, (int, float)):
        return "a probability per element (a tensor p)"
    if node.kwargs.get("generator") is not None:
        return "a generator of its own"
    return None


@_handles("bernoulli.p", "bernoulli.float", why=_bernoulli_why)
def _bernoulli(ctx, node):
    # 1 with probability p, else 0, in the operand's shape (its values
    # unused: stochastic depth draws into torch.empty): dropout's mask of
    # ones at rate 1 - p, a fresh draw each step from zcc's Philox stream,
    # read as exactly 0 or 1.
    p = float(_kw(node, 1, "p", 0.5))
    shape = list(_shape_of(node))
    if p <= 0.0 or p >= 1.0:
        return ops.full(shape, 1.0 if p >= 1.0 else 0.0)
    kept = ops.ne(ops.dropout(ops.full(shape, 1.0), 1.0 - p), 0.0)
    return ops.where(kept, ops.full(shape, 1.0), ops.full(shape, 0.0))


def _cross_entropy_why(node):
    reduction = _kw(node, 3, "reduction", 1)
    if _kw(node, 2, "weight", None) is not None:
        return "class weights"
    if reduction != 1:
        return "a reduction other than 'mean'"
    target = node.args[1].meta.get("val")
    if target is not None and target.is_floating_point():
        return "probability targets (class indices only)"
    return None


@_handles("cross_entropy_loss.default", why=_cross_entropy_why)
def _cross_entropy(ctx, node):
    logits, labels = ctx.get(node.args[0]), ctx.get(node.args[1])
    if logits.ndim > 2:  # PyTorch puts classes in dimension 1
        perm = [0] + list(range(2, logits.ndim)) + [1]
        logits = ops.transpose(logits, perm)
    # PyTorch always leaves out the rows labelled ignore_index (-100 unless
    # stated): padding, or the prompt in fine-tuning.
    return ops.cross_entropy(logits, labels,
                             ignore_index=_kw(node, 4, "ignore_index", -100),
                             label_smoothing=_kw(node, 5, "label_smoothing", 0.0))


def _channels(value, x):
    """A per-channel [C] tensor shaped to broadcast over x [N, C, ...]."""
    return ops.reshape(value, [x.shape[1]] + [1] * (x.ndim - 2))


def _affine(y, weight, bias):
    """A normalization's per-channel scale and shift, either optional."""
    if weight is not None:
        y = y * _channels(weight, y)
    return y + _channels(bias, y) if bias is not None else y


@_handles("batch_norm.default", "_native_batch_norm_legit_no_training.default")
def _batch_norm(ctx, node):
    # Training normalizes by the batch's own statistics (biased, over every
    # dimension but the channels) and, with running statistics, updates
    # them as PyTorch does: r = (1 - momentum) r + momentum s, with the
    # variance's s unbiased. Evaluation reads the running statistics.
    name = _target_name(node.target)
    x = ctx.get(node.args[0])
    weight, bias = (ctx.get(_kw(node, i, n, None))
                    for i, n in ((1, "weight"), (2, "bias")))
    if name == "batch_norm.default":
        training, eps = _kw(node, 5, "training", False), _kw(node, 7, "eps", 1e-5)
    else:
        training, eps = False, _kw(node, 6, "eps", 1e-5)
    if training:
        # zt.batch_norm: one pass forward (and again in the backward), two
        # in its gradient, over the batch's statistics (one more op, kept).
        stats = ops.batch_norm_stats(x)
        channels = [x.shape[1]]
        y = ops.batch_norm(
            x, stats,
            weight if weight is not None else ops.full(channels, 1.0),
            bias if bias is not None else ops.full(channels, 0.0),
            epsilon=float(eps))
        running = node.args[3:5] if len(node.args) >= 5 else ()
        if any(r is not None for r in running):
            momentum = _kw(node, 6, "momentum", 0.1)
            n = math.prod(x.shape) // x.shape[1]
            mean = ops.slice_dim(stats, 0, 0, 1)
            var = ops.slice_dim(stats, 0, 1, 2) * (n / max(n - 1, 1))
            for r, batch in zip(running, (mean, var)):
                old = ctx.get(r)
                ctx.write(r, old * (1.0 - momentum) +
                          ops.reshape(batch, list(old.shape)) * momentum)
        return y if name == "batch_norm.default" else [y, None, None]
    else:
        mean = _channels(ctx.get(node.args[3]), x)
        var = _channels(ctx.get(node.args[4]), x)
        centered = x - mean
    y = _affine(centered * ops.rsqrt(var + eps), weight, bias)
    return y if name == "batch_norm.default" else [y, None, None]


@_handles("group_norm.default")
def _group_norm(ctx, node):
    x = ctx.get(node.args[0])
    groups = node.args[1]
    weight, bias = (ctx.get(_kw(node, i, n, None))
                    for i, n in ((2, "weight"), (3, "bias")))
    eps = _kw(node, 4, "eps", 1e-5)
    grouped = ops.reshape(x, [x.shape[0], groups, -1])
    mean = ops.mean(grouped, [2], True)
    centered = grouped - mean
    var = ops.mean(centered * centered, [2], True)
    y = ops.reshape(centered * ops.rsqrt(var + eps), list(x.shape))
    return _affine(y, weight, bias)


@_handles("binary_cross_entropy_with_logits.default",
          why=lambda node: "weight or pos_weight" if
          _kw(node, 2, "weight", None) is not None or
          _kw(node, 3, "pos_weight", None) is not None else
          None if _kw(node, 4, "reduction", 1) == 1 else
          "a reduction other than 'mean'")
def _bce_with_logits(ctx, node):
    # softplus(x) - x t: PyTorch's gradient sigmoid(x) - t everywhere.
    x, t = ctx.get(node.args[0]), ctx.get(node.args[1])
    return ops.mean(ops.softplus(x) - x * t)


def _nll_why(node):
    source = node.args[0]
    if getattr(source, "op", None) != "call_function" or \
            _target_name(source.target) != "_log_softmax.default" and \
            _target_name(source.target) != "log_softmax.int":
        return "log-probabilities other than a log_softmax's (a gather)"
    if _kw(node, 2, "weight", None) is not None:
        return "class weights"
    if _kw(node, 3, "reduction", 1) != 1:
        return "a reduction other than 'mean'"
    return None


@_handles("nll_loss.default", "nll_loss_nd.default", why=_nll_why)
def _nll_loss(ctx, node):
    # nll_loss(log_softmax(z)) is cross-entropy of z: the fused loss.
    source = node.args[0]
    z = ctx.get(source.args[0])
    dim = source.args[1] % z.ndim
    if dim != z.ndim - 1:
        perm = [d for d in range(z.ndim) if d != dim] + [dim]
        z = ops.transpose(z, perm)
    return ops.cross_entropy(z, ctx.get(node.args[1]),
                             ignore_index=_kw(node, 4, "ignore_index", -100))


@_handles("mse_loss.default",
          why=lambda node: None if _kw(node, 2, "reduction", 1) == 1 else
          "a reduction other than 'mean'")
def _mse(ctx, node):
    return ops.mse(ctx.get(node.args[0]), ctx.get(node.args[1]))


def _reduction(fn):
    def handler(ctx, node):
        x = ctx.get(node.args[0])
        dims = _kw(node, 1, "dim", None)
        keep = _kw(node, 2, "keepdim", False)
        if dims is not None and not isinstance(dims, (list, tuple)):
            dims = [dims]
        return fn(x, dims if dims else None, keep)
    return handler


_handles("sum.dim_IntList", "sum.default")(_reduction(ops.sum))
_handles("mean.dim", "mean.default")(_reduction(ops.mean))
_handles("amax.default")(_reduction(ops.max))


def _sdpa_why(node):
    mask = _kw(node, 3, "attn_mask", None)
    if mask is not None and not getattr(mask, "_zcc_known", False):
        val = mask.meta.get("val")
        import torch
        if val is not None and val.dtype != torch.bool:
            return "an additive (float) attn_mask computed from data"
    return None


def _shape_of(node):
    val = node.meta.get("val") if hasattr(node, "meta") else None
    return tuple(val.shape) if val is not None and hasattr(val, "shape") \
        else None


def _unrepeated(node, heads):
    """The key or value [B..., Hkv, T, D] that `node` repeats to `heads`
    heads (transformers' `repeat_kv`: an unsqueeze after the heads, an
    expand, a copy and a view), so that grouped-query attention reads it
    without the copy; else `node`."""
    shape = _shape_of(node)
    view = node
    while _target_name(view.target) in ("view.default", "reshape.default",
                                        "_unsafe_view.default"):
        view = view.args[0]
    base = view
    while _target_name(base.target) in ("clone.default", "contiguous.default",
                                        "alias.default"):
        base = base.args[0]
    if _target_name(base.target) != "expand.default":
        return node
    expanded = _shape_of(base)
    inner = base.args[0]
    if _target_name(inner.target) != "unsqueeze.default":
        return node
    source = inner.args[0]
    kv = _shape_of(source)
    if shape is None or expanded is None or kv is None or len(kv) < 3 or \
            len(kv) != len(shape) or inner.args[1] % (len(kv) + 1) != len(kv) - 2:
        return node
    groups = heads // kv[-3] if kv[-3] else 0
    if groups < 1 or kv[-3] * groups != heads or shape[-3] != heads or \
            expanded != kv[:-2] + (groups,) + kv[-2:] or \
            shape != kv[:-3] + (heads,) + kv[-2:]:
        return node
    return source


@_handles("scaled_dot_product_attention.default", why=_sdpa_why)
def _sdpa(ctx, node):
    # zt.attention: the same function (is_causal's top-left alignment
    # included), saving only the output and a logsumexp per query row.
    # Grouped-query attention (enable_gqa, or keys and values repeated by
    # transformers' repeat_kv): zt.attention reads the key and value heads
    # each query head shares, so the repeated copies are never made.
    q = ctx.get(node.args[0])
    k, v = (ctx.get(_unrepeated(a, q.shape[-3]) if q.ndim >= 3 else a)
            for a in node.args[1:3])
    if k.shape[:-2] != v.shape[:-2]:  # one repeated, the other not
        k, v = ctx.get(node.args[1]), ctx.get(node.args[2])
    causal = bool(_kw(node, 5, "is_causal", False))
    scale = node.kwargs.get("scale", _kw(node, 6, "scale", None))
    # Attention dropout: the probabilities dropped out in the kernel.
    dropout = float(_kw(node, 4, "dropout_p", 0.0))
    mask = _kw(node, 3, "attn_mask", None)
    if mask is not None and getattr(mask, "_zcc_known", False):
        kind = _mask_kind(ctx.raw(mask), q.shape[-2], k.shape[-2])
        if kind is None:
            raise Error(f"from_torch: {_where_of(node)}: "
                        "scaled_dot_product_attention's attn_mask, known at "
                        "import, is neither causal nor all allowed")
        return ops.attention(q, k, v, causal=causal or kind == "causal",
                             scale=scale, dropout=dropout)
    if mask is not None:
        # A mask from data (padding): a causal part known at import becomes
        # the causal flag, and the kernel reads the rest as it is (a
        # padding mask [B, 1, 1, T] stays that small).
        known_causal, mask = _causal_part(ctx, mask, q.shape[-2], k.shape[-2])
        causal = causal or known_causal
        m = ctx.get(mask)
        if m.ndim < q.ndim:  # broadcast from the right, as PyTorch does
            m = ops.reshape(m, [1] * (q.ndim - m.ndim) + list(m.shape))
        return ops.attention(q, k, v, causal=causal, scale=scale, mask=m,
                             dropout=dropout)
    return ops.attention(q, k, v, causal=causal, scale=scale, dropout=dropout)


def _causal_part(ctx, mask, queries, keys):
    """(True, the rest) when the bool mask `mask` is `causal & rest` with
    the causal part known at import (through broadcasts and same-dtype
    copies); else (False, mask)."""
    node = mask
    while _target_name(node.target) in ("expand.default", "alias.default",
                                        "clone.default", "contiguous.default") \
            or (_target_name(node.target) in ("to.dtype", "to.dtype_layout",
                                              "_to_copy.default") and
                _dtype_change(node) is None):
        node = node.args[0]
    if _target_name(node.target) not in ("__and__.Tensor", "bitwise_and.Tensor",
                                         "logical_and.default"):
        return False, mask
    for known, rest in (node.args[:2], node.args[1::-1]):
        if getattr(known, "_zcc_known", False) and \
                not getattr(rest, "_zcc_known", False) and \
                _mask_kind(ctx.raw(known), queries, keys) == "causal":
            return True, rest
    return False, mask


def _mask_kind(mask, queries, keys):
    """What an attention mask known at import allows: "all" (every key),
    "causal" (key j for query i when j <= i, top-left aligned as is_causal),
    or None. A bool mask allows True; a float mask adds 0 where allowed and
    -inf (or the dtype's lowest) where not."""
    import torch
    if mask.dtype == torch.bool:
        allowed = mask
    else:
        if not torch.all((mask == 0) | (mask <= torch.finfo(mask.dtype).min / 2)):
            return None
        allowed = mask == 0
    allowed = allowed.broadcast_to(allowed.shape[:-2] + (queries, keys))
    if bool(allowed.all()):
        return "all"
    causal = torch.ones(queries, keys, dtype=torch.bool).tril()
    if bool((allowed == causal).all()):
        return "causal"
    return None


@_handles("masked_fill.Scalar", "masked_fill.Tensor")
def _masked_fill(ctx, node):
    x, value = ctx.get(node.args[0]), node.args[2]
    if not getattr(node, "_zcc_constant_mask", False):
        # A mask computed from data: zt.where, whose gradient is exactly 0
        # at the filled places.
        fill = value if isinstance(value, (int, float)) else ctx.get(value)
        return ops.where(ctx.get(node.args[1]), fill, x)
    # With a mask known at import: x * keep + fill, both constants, so the
    # gradient at masked places is exactly 0 and no -inf meets a 0 factor.
    mask = ctx.raw(node.args[1]).detach().cpu().numpy().astype(bool)
    if not isinstance(value, (int, float)):
        value = float(ctx.raw(value))
    keep = (~mask).astype(np.float32)
    fill = np.where(mask, np.float32(value), np.float32(0)).astype(np.float32)
    return x * keep + fill


def _handler_key(node):
    """The handler of a node: its op's, or for an in-place op (`relu_`,
    `add_`) its functional form's; None when zcc has neither."""
    key = _target_name(node.target)
    if key in _HANDLERS:
        return key
    packet, _, overload = key.partition(".")
    if packet.endswith("_") and not packet.startswith("_"):
        functional = f"{packet[:-1]}.{overload}"
        if functional in _HANDLERS:
            return functional
    return None


def _is_view(node):
    """Whether a node's result aliases its first argument (a view, or an
    element of a split's list)."""
    if node.target is operator.getitem:
        return True
    schema = getattr(node.target, "_schema", None)
    alias = schema.returns[0].alias_info if schema and schema.returns else None
    return alias is not None and not alias.is_write


def _in_place_why(node, order, states=()):
    """Why an in-place node cannot be its functional form: it writes an
    input or parameter, or a view of another tensor, or a later node reads
    what it writes through another name (the tensor or a view of it;
    export points later reads of the tensor itself at the in-place node);
    else None. A buffer the step updates (`states`) is written as state."""
    written = node.args[0]
    if written in states:
        return None
    if getattr(written, "op", None) == "placeholder":
        return "in place on an input or parameter"
    if _is_view(written):
        return "in place on a view of another tensor"
    aliases, pending = {written}, [written]
    while pending:
        for user in pending.pop().users:
            if user is not node and _is_view(user) and user not in aliases:
                aliases.add(user)
                pending.append(user)
    if any(order[user] > order[node] for alias in aliases
           for user in alias.users if user is not node):
        return "in place on a tensor read afterwards (through a view)"
    return None


def _getitem(ctx, node):
    return ctx.get(node.args[0])[node.args[1]]


def _target_name(target):
    name = getattr(target, "_overloadpacket", None)
    if name is not None:
        return f"{target._overloadpacket.__name__}.{target._overloadname}"
    return getattr(target, "__name__", str(target))


def _predictions(out, loss_inside):
    """The module's outputs a predict entry returns: (name, tensor) of each
    floating-point tensor, by key (a dict or a transformers ModelOutput)
    or position; with `loss_inside` (no loss function: the module returns
    its own) the loss itself is left out. Also the loss the module returns
    (None unless `loss_inside`)."""
    import torch

    def floating(v):
        return isinstance(v, torch.Tensor) and v.is_floating_point()

    if isinstance(out, torch.Tensor):
        return ([], out) if loss_inside else ([("output", out)], None)
    if hasattr(out, "items"):
        items = [(str(k), v) for k, v in out.items()]
        own = dict(items).get("loss") if loss_inside else None
        if loss_inside and own is None and items:
            own = items[0][1]
        return [(k, v) for k, v in items
                if floating(v) and v is not own and k != "loss"], own
    if isinstance(out, (list, tuple)):
        own = out[0] if loss_inside and out else None
        return [(f"output{i}", v) for i, v in enumerate(out)
                if floating(v) and v is not own], own
    return [], out if loss_inside else None


def from_torch(module, example_inputs, example_labels=(), loss=None,
               name=None, evaluate=True):
    """Imports `module` with its loss: `loss(module(*inputs), *labels)`, a
    PyTorch function returning a scalar (for example F.cross_entropy; with
    no loss the module itself returns the loss). Returns a zcc.Traced whose
    parameters are named as in `module.named_parameters()` and start from
    the module's current values.

    With `evaluate` (the default) the module is also exported in eval mode
    (dropout off, BatchNorm on its running statistics) for the plan's eval
    entry (Session.eval: the same loss) and predict entry (Session.predict:
    the module's floating-point outputs by name, a dict); the module's
    train/eval modes are left as they were."""
    import torch

    if not isinstance(example_inputs, (list, tuple)):
        example_inputs = (example_inputs,)
    if not isinstance(example_labels, (list, tuple)):
        example_labels = (example_labels,)
    # torch.export reads one placeholder for tensors passed twice (an input
    # that is also the label): each example its own storage, so each feed
    # is read where the module reads it.
    seen, distinct = set(), []
    for t in tuple(example_inputs) + tuple(example_labels):
        if isinstance(t, torch.Tensor):
            storage = t.untyped_storage().data_ptr()
            if storage in seen:
                t = t.clone()
            seen.add(storage)
        distinct.append(t)
    example_inputs = tuple(distinct[:len(example_inputs)])
    example_labels = tuple(distinct[len(example_inputs):])
    n_inputs = len(example_inputs)

    try:
        forward_names = [p for p in inspect.signature(module.forward).parameters
                         if p not in ("self",)]
    except (TypeError, ValueError):
        forward_names = []

    def run(inner, args):
        """The module on the inputs; with no loss function, the labels go
        to the module too (a transformers model's `labels=`, which makes it
        return its own loss; else after the inputs)."""
        inputs, labels = args[:n_inputs], args[n_inputs:]
        if loss is not None or not labels:
            return inner(*inputs)
        if labels_by_name:
            return inner(*inputs, labels=labels[0])
        return inner(*inputs, *labels)

    labels_by_name = loss is None and len(example_labels) == 1 and \
        "labels" in forward_names[n_inputs:]

    class WithLoss(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            out = run(self.inner, args)
            if loss is None:
                return out
            return loss(out, *args[n_inputs:])

    predicted = []  # (name) of each prediction, recorded while exporting

    class WithOutputs(WithLoss):
        """The loss, then the module's predictions."""

        def forward(self, *args):
            out = run(self.inner, args)
            outputs, own = _predictions(out, loss is None)
            predicted[:] = [n for n, _ in outputs]
            value = own if loss is None else loss(out, *args[n_inputs:])
            return (value,) + tuple(t for _, t in outputs)

    class Predictions(WithLoss):
        """The module's predictions alone, from its inputs."""

        def forward(self, *args):
            # A model given its labels by keyword returns no loss without.
            outputs, _ = _predictions(self.inner(*args),
                                      loss is None and not labels_by_name)
            predicted[:] = [n for n, _ in outputs]
            return tuple(t for _, t in outputs)

    import time
    started = time.perf_counter()
    wrapper = WithLoss(module)
    exported = _export(wrapper, example_inputs + example_labels)
    exported_at = time.perf_counter()

    # The names users know: the module's forward arguments, then labels.
    input_names = [forward_names[i] if i < len(forward_names) else f"input{i}"
                   for i in range(n_inputs)]
    label_names = (["labels"] if len(example_labels) == 1 else
                   [f"labels{i}" for i in range(len(example_labels))])
    taken = set(input_names)
    label_names = [n if n not in taken else "_" + n for n in label_names]
    examples = example_inputs + example_labels
    feed_names = input_names + label_names

    train = _Import(exported, wrapper, module, feed_names, n_inputs, examples)
    step = train.function(None)
    step.__name__ = name or type(module).__name__
    traced = trace(step, **train.specs(None))
    imported_at = time.perf_counter()
    timings = {"torch.export": exported_at - started,
               "zcc import": imported_at - exported_at}
    if evaluate:
        modes = [(m, m.training) for m in module.modules()]
        module.eval()
        try:
            outputs = WithOutputs(module)
            exported_eval = _export(outputs, examples)
            ev = _Import(exported_eval, outputs, module, feed_names, n_inputs,
                         examples, forced_state=train.state_targets)
            traced.add_eval(ev.function([0]), **ev.specs([0]))
            chosen = list(range(1, len(predicted) + 1))
            if set(ev.specs(chosen)) & set(label_names):
                # The export made a prediction from a label's graph (a
                # loss's broadcast_tensors returns the module's output):
                # the predictions exported alone, from the inputs.
                alone = Predictions(module)
                exported_alone = _export(alone, example_inputs)
                ev = _Import(exported_alone, alone, module, input_names,
                             n_inputs, example_inputs,
                             forced_state=train.state_targets)
                chosen = list(range(len(predicted)))
        finally:
            for m, training in modes:
                m.training = training
        if predicted:
            traced.add_predict(ev.function(chosen, names=list(predicted)),
                               **ev.specs(chosen))
        timings["torch.export and zcc import (eval, predict)"] = \
            time.perf_counter() - imported_at
    traced.timings = timings
    # A torch optimizer's parameters by object, for compile(optimizer=).
    traced._torch_names = {id(p): n for n, p in module.named_parameters()}

    # compile(fit=...) imports the module again at each microbatch size.
    def reimport(microbatch):
        from ._fit import microbatch_of
        sliced = microbatch_of(examples, microbatch)
        return from_torch(module, sliced[:n_inputs], sliced[n_inputs:],
                          loss=loss, name=name, evaluate=evaluate)
    traced._reimport = reimport
    traced._fit_examples = examples
    return traced


def _export(wrapper, examples):
    import torch
    try:
        return torch.export.export(wrapper, examples)
    except Exception as error:  # torch's own message, with its cause
        raise Error(f"from_torch: torch.export failed: {error}") from error


class _Import:
    """One exported program, checked (every unsupported op at once) and
    ready to trace: function(outputs) is the step that computes the chosen
    user outputs (None: the training step's loss and state updates)."""

    prefix = "inner."

    def __init__(self, exported, wrapper, module, feed_names, n_inputs,
                 examples, forced_state=()):
        import torch

        prefix = self.prefix
        self.exported, self.wrapper = exported, wrapper
        self.feed_names, self.n_inputs = feed_names, n_inputs
        signature = exported.graph_signature
        problems = []
        mutated = [spec.target for spec in signature.output_specs
                   if spec.kind.name in ("BUFFER_MUTATION",
                                         "USER_INPUT_MUTATION",
                                         "PARAMETER_MUTATION")]
        # The training IR also mutates in place (batch_norm's running
        # stats): an argument the op's schema writes that is a buffer or
        # parameter.
        lifted = {spec.arg.name: spec.target for spec in signature.input_specs
                  if spec.kind.name in ("BUFFER", "PARAMETER")}
        for node in exported.graph.nodes:
            schema = getattr(node.target, "_schema", None)
            if node.op != "call_function" or schema is None:
                continue
            written = [i for i, argument in enumerate(schema.arguments)
                       if argument.alias_info is not None and
                       argument.alias_info.is_write]
            # Composite ops whose schema hides it: batch_norm and
            # instance_norm update their running statistics (arguments 3
            # and 4) in training.
            if _target_name(node.target) in ("batch_norm.default",
                                              "instance_norm.default") and \
                    _kw(node, 5, "training", False):
                written += [3, 4]
            for i in written:
                argument = schema.arguments[i]
                value = node.args[i] if i < len(node.args) else \
                    node.kwargs.get(argument.name)
                if getattr(value, "name", None) in lifted and \
                        lifted[value.name] not in mutated:
                    mutated.append(lifted[value.name])
        # Buffers the step writes (BatchNorm's running statistics and
        # counter) become state, updated in place; parameters and inputs
        # stay read-only. An eval program reads the training step's state
        # (forced_state) where it would otherwise fold the buffer.
        buffers = {spec.target for spec in signature.input_specs
                   if spec.kind.name == "BUFFER"}
        self.state_targets = [t for t in mutated if t in buffers] + \
            [t for t in forced_state if t not in mutated]
        for target in mutated:
            if target in buffers:
                continue
            name = target[len(prefix):] if target and \
                target.startswith(prefix) else target
            problems.append(f"  the step writes '{name}' in place, a "
                            "parameter or input: zcc steps write only "
                            "buffers (state)")
        self.state_nodes = {node for node in exported.graph.nodes
                            if node.op == "placeholder" and
                            lifted.get(node.name) in self.state_targets}

        known = _constant_nodes(exported.graph, signature,
                                mutated + list(forced_state))
        order = {node: i for i, node in enumerate(exported.graph.nodes)}
        for node in known:
            node._zcc_known = True
        unsupported = {}
        for node in exported.graph.nodes:
            if node.op != "call_function":
                continue
            if node.target is operator.getitem or node in known:
                continue  # folded at import
            if _target_name(node.target).startswith("masked_fill."):
                node._zcc_constant_mask = node.args[1] in known
            if _target_name(node.target) == "index.Tensor":
                node._zcc_known_indices = all(i in known for i in node.args[1]
                                              if i is not None)
            key = _target_name(node.target)
            handler = _handler_key(node)
            why = None
            if handler is None:
                why = "no zcc mapping"
            elif handler != key and _in_place_why(node, order,
                                                  self.state_nodes):
                why = _in_place_why(node, order, self.state_nodes)
            elif handler in _WHY:
                why = _WHY[handler](node)
            if why is None:
                continue
            entry = unsupported.setdefault((key, why), [0, node])
            entry[0] += 1
        for (key, why), (count, node) in unsupported.items():
            file, line = _frame(node)
            where = f"{file}:{line}" if file else "(no source line)"
            problems.append(f"  aten.{key} ({why}): {count} "
                            f"use{'s' * (count > 1)}, first at {where} in "
                            f"module '{_module_path(node, prefix)}'")
        if problems:
            raise Error("from_torch: the module cannot be imported:\n"
                        + "\n".join(problems))
        self.known = known

        # Tied parameters are one tensor under several names: one zcc
        # parameter, named by its first name in module.named_parameters().
        self.canonical = {}
        for pname, p in module.named_parameters():
            self.canonical.setdefault(id(p), pname)
        user_inputs = [spec for spec in signature.input_specs
                       if spec.kind.name == "USER_INPUT"]
        self.placeholders = {spec.arg.name: spec
                             for spec in signature.input_specs}
        self.feed_of = {spec.arg.name: feed_names[i]
                        for i, spec in enumerate(user_inputs)}
        # Where each user output is among the graph's outputs (after any
        # mutated buffers).
        self.user_outputs = [i for i, spec in
                             enumerate(signature.output_specs)
                             if spec.kind.name == "USER_OUTPUT"]

        def dtype_of(t):
            if t.is_floating_point():
                return "float32"
            if t.dtype == torch.int32:
                return "int32"
            if t.dtype == torch.int64:
                return "int64"
            if t.dtype == torch.bool:
                return "bool"
            raise Error(f"from_torch: inputs of dtype {t.dtype} are not "
                        "supported")

        self.all_specs = {}
        for i, spec in enumerate(user_inputs):
            t = examples[i]
            make = _input if i < n_inputs else _label
            self.all_specs[feed_names[i]] = make(tuple(t.shape), dtype_of(t))

    def _needed(self, outputs):
        """The nodes the chosen user outputs depend on (None: all)."""
        if outputs is None:
            return None
        graph_out = [n for n in self.exported.graph.nodes
                     if n.op == "output"][0]
        flat = graph_out.args[0]
        work = [flat[self.user_outputs[i]] for i in outputs]
        needed = set()
        while work:
            node = work.pop()
            if node in needed or not hasattr(node, "all_input_nodes"):
                continue
            needed.add(node)
            work.extend(node.all_input_nodes)
        return needed

    def specs(self, outputs):
        """The zcc.input/label specs of the feeds the chosen outputs need,
        in the module's order."""
        needed = self._needed(outputs)
        if needed is None:
            return dict(self.all_specs)
        used = {self.feed_of[n.name] for n in needed
                if n.op == "placeholder" and n.name in self.feed_of}
        return {name: spec for name, spec in self.all_specs.items()
                if name in used}

    def function(self, outputs, names=None):
        """The step: None for the training step (the first output, the
        loss, and the state's updates); else the chosen user outputs (one:
        that tensor; several: a dict by `names`)."""
        import torch

        exported, wrapper, prefix = self.exported, self.wrapper, self.prefix
        known, placeholders = self.known, self.placeholders
        feed_of, canonical = self.feed_of, self.canonical
        state_nodes = self.state_nodes
        needed = self._needed(outputs)
        state = exported.state_dict
        constants = getattr(exported, "constants", {})
        user_outputs = self.user_outputs

        def step(**feeds):
            ctx = _Context()
            used = {n for node in exported.graph.nodes
                    for n in node.all_input_nodes}
            for node in exported.graph.nodes:
                # Values known at import are all folded, needed or not: an
                # in-place op on a view of one (a mask built by slice
                # assignments) changes it without being its ancestor.
                if needed is not None and node not in needed and \
                        node.op != "output" and node not in known:
                    continue
                if node.op == "placeholder":
                    spec = placeholders[node.name]
                    kind = spec.kind.name
                    if kind == "USER_INPUT":
                        ctx.values[node] = feeds[feed_of[node.name]]
                    elif node not in used:
                        continue
                    elif node in known:  # a buffer or lifted constant
                        ctx.values[node] = _Const(state.get(
                            spec.target, constants.get(spec.target)))
                    elif kind == "PARAMETER":
                        tensor = state[spec.target]
                        pname = canonical.get(
                            id(wrapper.get_parameter(spec.target)),
                            spec.target[len(prefix):])
                        if pname not in ctx.values:
                            ctx.values[pname] = param(
                                pname, tuple(tensor.shape),
                                init=tensor.detach().cpu().numpy())
                        ctx.values[node] = ctx.values[pname]
                    else:  # a buffer the step writes (or reads): state
                        tensor = state[spec.target]
                        sname = spec.target[len(prefix):]
                        # Integer counters too, as f32 (exact to 2**24
                        # steps).
                        declared = _state(
                            sname, tuple(tensor.shape),
                            init=tensor.detach().cpu().double().numpy())
                        ctx.values[node] = declared
                        if node in state_nodes and outputs is None:
                            ctx.states[node] = declared
                elif node.op == "call_function" and node in known:
                    with torch.no_grad():
                        ctx.values[node] = _Const(node.target(
                            *_folding_args(ctx, node),
                            **ctx.raw(dict(node.kwargs))))
                elif node.op == "call_function":
                    with _location(*_frame(node)):
                        if node.target is operator.getitem:
                            ctx.values[node] = _getitem(ctx, node)
                        else:
                            ctx.values[node] = \
                                _HANDLERS[_handler_key(node)](ctx, node)
                        if node.args and node.args[0] in ctx.states and \
                                _handler_key(node) != _target_name(node.target):
                            ctx.write(node.args[0], ctx.values[node])
                elif node.op == "output":
                    if outputs is None:
                        for buffer, declared in ctx.states.items():
                            if ctx.values[buffer] is not declared:
                                _update(declared, ctx.values[buffer])
                        result = ctx.get(node.args[0])
                        return result[0] if isinstance(result, (list, tuple)) \
                            else result
                    flat = node.args[0]
                    chosen = [ctx.get(flat[user_outputs[i]]) for i in outputs]
                    if names is None:
                        return chosen[0]
                    return dict(zip(names, chosen))
            raise Error("from_torch: the exported graph has no output")

        return step
