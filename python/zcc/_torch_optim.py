"""A PyTorch script's optimizer and scheduler as zcc's (Traced.compile with
optimizer=torch.optim.AdamW(...), lr_schedule=a torch scheduler): the
hyperparameters are read, not restated, and what zcc cannot express is an
error naming it (docs/python.md#pytorch-optimizers-and-schedulers)."""

import math
import warnings

from ._zcc import Error

# Relative agreement a read factor must have with zcc's formula.
_CLOSE = 1e-9


def _close(a, b):
    return abs(a - b) <= _CLOSE * max(1.0, abs(a), abs(b))


def _only(groups, key, what):
    """The one value every group has for `key`, or an error."""
    values = []
    for group in groups:
        value = group.get(key)
        if isinstance(value, (list, tuple)):
            value = tuple(value)
        if value not in values:
            values.append(value)
    if len(values) > 1:
        raise Error(f"optimizer: parameter groups with different {what} "
                    f"({', '.join(map(repr, values))}): zcc's optimizer has "
                    f"one (only the weight decay may be 0 in some groups)")
    return values[0]


def base_lr(optimizer):
    """The groups' learning rate before any scheduler scaled it."""
    groups = optimizer.param_groups
    return float(_only([{"lr": g.get("initial_lr", g["lr"])} for g in groups],
                       "lr", "learning rates"))


def optimizer_from_torch(optimizer, names):
    """zcc's optimizer for a torch optimizer over the module's parameters
    (`names`: id(parameter) -> its name in module.named_parameters(), the
    Traced's parameter names)."""
    import torch

    from . import _trace

    kind = type(optimizer).__name__
    groups = optimizer.param_groups
    # Every parameter must be updated (zcc updates all), and only those.
    covered = set()
    for group in groups:
        for p in group["params"]:
            if id(p) not in names:
                raise Error(f"optimizer: a parameter of shape {tuple(p.shape)} "
                            f"is not one of the module's (named_parameters)")
            covered.add(names[id(p)])
    missing = sorted(set(names.values()) - covered)
    if missing:
        raise Error(f"optimizer: parameters {missing[:5]} are in no group: "
                    f"zcc updates every parameter (freeze by leaving them "
                    f"out of the module's parameters)")
    for flag in ("amsgrad", "maximize", "differentiable"):
        if any(g.get(flag) for g in groups):
            raise Error(f"optimizer: {kind}'s {flag}=True is not supported")
    lr = base_lr(optimizer)
    # One weight decay, or one and 0 (nanoGPT's and Hugging Face's groups).
    decays = sorted({float(g.get("weight_decay", 0.0)) for g in groups})
    if len(decays) > 2 or (len(decays) == 2 and decays[0] != 0.0):
        raise Error(f"optimizer: parameter groups with weight decays "
                    f"{decays}: zcc has one weight decay and a group "
                    f"without it")
    decay = decays[-1]
    no_decay = sorted(names[id(p)] for g in groups
                      if float(g.get("weight_decay", 0.0)) == 0.0
                      for p in g["params"]) if len(decays) == 2 else None
    adamw = isinstance(optimizer, torch.optim.AdamW) or (
        isinstance(optimizer, torch.optim.Adam) and
        (decay == 0.0 or any(g.get("decoupled_weight_decay") for g in groups)))
    if adamw:
        betas = _only(groups, "betas", "betas")
        eps = _only(groups, "eps", "eps")
        return _trace.adamw(lr=lr, betas=betas, eps=eps, weight_decay=decay,
                            no_decay=no_decay)
    if isinstance(optimizer, torch.optim.Adam):
        raise Error("optimizer: torch.optim.Adam with weight_decay adds the "
                    "decay to the gradient (L2), which zcc's AdamW does not "
                    "(decoupled); use torch.optim.AdamW, or Adam without "
                    "weight decay")
    if isinstance(optimizer, torch.optim.SGD):
        if any(g.get("dampening", 0.0) for g in groups):
            raise Error("optimizer: SGD's dampening is not supported")
        momentum = float(_only(groups, "momentum", "momenta"))
        nesterov = bool(_only(groups, "nesterov", "nesterov settings"))
        return _trace.sgd(lr=lr, momentum=momentum, nesterov=nesterov,
                          weight_decay=decay, no_decay=no_decay)
    raise Error(f"optimizer: torch.optim.{kind} is not supported (zcc has "
                f"AdamW, Adam without weight decay and SGD with momentum)")


def _cosine_past_end(steps):
    """PyTorch's CosineAnnealingLR is periodic: past T_max it rises again;
    zcc's decay holds its floor from `steps` on."""
    from ._trace import CompileWarning
    warnings.warn(f"lr_schedule: PyTorch's CosineAnnealingLR rises again "
                  f"after T_max; zcc holds eta_min from step {steps} on: "
                  f"the two agree for the first {steps} steps",
                  CompileWarning, stacklevel=4)


def _linear_warmup(scheduler):
    """A LinearLR that is zcc's warmup: its steps, else None."""
    w = int(scheduler.total_iters)
    if _close(scheduler.end_factor, 1.0) and \
            _close(scheduler.start_factor, 1.0 / (w + 1)):
        return w
    return None


def schedule_from_torch(scheduler, lr):
    """zcc's lr_schedule for a torch scheduler of the shapes zcc computes
    (warmup, then a cosine or linear decay to a floor), `lr` the base."""
    import torch.optim.lr_scheduler as S

    from . import _trace

    kind = type(scheduler).__name__
    if isinstance(scheduler, S.LambdaLR):
        return _fit_lambda(scheduler, kind)
    if isinstance(scheduler, S.CosineAnnealingLR):
        _cosine_past_end(int(scheduler.T_max))
        return _trace.lr_schedule(decay="cosine",
                                  decay_steps=int(scheduler.T_max),
                                  min_lr=float(scheduler.eta_min))
    if isinstance(scheduler, S.LinearLR):
        w = _linear_warmup(scheduler)
        if w is None:
            raise Error(
                f"lr_schedule: LinearLR(start_factor={scheduler.start_factor}, "
                f"end_factor={scheduler.end_factor}, total_iters="
                f"{scheduler.total_iters}) is not zcc's warmup, which "
                f"rises from 1/(W+1) to 1 over W steps (start_factor = "
                f"1/(total_iters+1), end_factor = 1)")
        return _trace.lr_schedule(warmup_steps=w)
    if isinstance(scheduler, S.SequentialLR):
        parts = scheduler._schedulers
        milestones = list(scheduler._milestones)
        if len(parts) == 2 and isinstance(parts[0], S.LinearLR) and \
                _linear_warmup(parts[0]) == milestones[0]:
            w = milestones[0]
            second = parts[1]
            if isinstance(second, S.CosineAnnealingLR):
                _cosine_past_end(w + int(second.T_max))
                return _trace.lr_schedule(
                    warmup_steps=w, decay="cosine",
                    decay_steps=w + int(second.T_max),
                    min_lr=float(second.eta_min))
            if isinstance(second, S.LinearLR) and \
                    _close(second.start_factor, 1.0):
                return _trace.lr_schedule(
                    warmup_steps=w, decay="linear",
                    decay_steps=w + int(second.total_iters),
                    min_lr=lr * float(second.end_factor))
        raise Error("lr_schedule: SequentialLR is supported as a LinearLR "
                    "warmup (start_factor 1/(W+1), to 1, milestone W) then a "
                    "CosineAnnealingLR or a decaying LinearLR")
    raise Error(f"lr_schedule: {kind} is not supported (zcc computes a warmup "
                f"then a cosine or linear decay: LambdaLR of that shape, "
                f"CosineAnnealingLR, LinearLR warmup, SequentialLR of them)")


def _fit_lambda(scheduler, kind):
    """The warmup W, decay and floor of a LambdaLR whose factor is
    nanoGPT's get_lr over the base rate, found from its values and then
    checked against zcc's formula at every step sampled."""
    from . import _trace

    if len(scheduler.lr_lambdas) != 1 and \
            len({id(f) for f in scheduler.lr_lambdas}) != 1:
        raise Error("lr_schedule: LambdaLR with a different function per "
                    "group: zcc has one schedule")
    f = scheduler.lr_lambdas[0]
    f0 = float(f(0))
    if not (0 < f0 <= 1):
        raise Error(f"lr_schedule: {kind}'s factor at step 0 is {f0}; zcc's "
                    f"schedules start at 1/(W+1) of the rate (W warmup steps)")
    w = int(round(1.0 / f0 - 1.0))
    # Where the factor reaches its floor and stays: steps sampled densely,
    # then sparsely to two million, then the first step at the floor found
    # by bisection (the decays never rise).
    samples = list(range(0, 20001)) + list(range(21000, 2000001, 1000))
    values = {k: float(f(k)) for k in samples}
    floor = values[samples[-1]]
    last_above = max((k for k in samples if not _close(values[k], floor)),
                     default=-1)
    if _close(floor, 1.0) or last_above == samples[-1]:
        # No decay: the rate after the warmup (checked below), or factors
        # that never settle (refused below, at the first that differs).
        decay, d = None, 0
    else:
        above = [k for k in samples if k > last_above]
        lo, hi = last_above, above[0]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _close(float(f(mid)), floor):
                hi = mid
            else:
                lo = mid
        d = hi
        if d <= w:
            raise Error(f"lr_schedule: {kind} reaches its floor at step {d}, "
                        f"within its {w} warmup steps")
        # Cosine or linear: which one a quarter into the decay says (at
        # the middle the two agree).
        k = w + max(1, (d - w) // 4)
        r = (k - w) / (d - w)
        cosine = floor + (1 - floor) * (1 + math.cos(math.pi * r)) / 2
        linear = floor + (1 - floor) * (1 - r)
        decay = "cosine" if _close(float(f(k)), cosine) else (
            "linear" if _close(float(f(k)), linear) else None)
        if decay is None:
            raise Error(f"lr_schedule: {kind}'s factor at step {k} is "
                        f"{float(f(k))}: neither a cosine ({cosine}) nor a "
                        f"linear ({linear}) decay from step {w} to {d}")
    # Every sampled step against zcc's formula.
    for k in sorted(set(samples) | {d - 1, d, d + 1} if d else samples):
        if k < 0:
            continue
        if k < w:
            want = (k + 1) / (w + 1)
        elif decay is None:
            want = 1.0
        elif k >= d:
            want = floor
        else:
            r = (k - w) / (d - w)
            c = (1 + math.cos(math.pi * r)) / 2 if decay == "cosine" else 1 - r
            want = floor + c * (1 - floor)
        got = float(f(k))
        if not _close(got, want):
            raise Error(f"lr_schedule: {kind}'s factor at step {k} is {got}, "
                        f"zcc's schedule (warmup {w}, {decay or 'no'} decay"
                        f"{f' to step {d}' if d else ''}) gives {want}")
    return _trace.lr_schedule(warmup_steps=w, decay=decay, decay_steps=d,
                              min_lr=floor * _base(scheduler) if decay else 0.0)


def _base(scheduler):
    return float(scheduler.base_lrs[0])


# The optimizer state per parameter: (torch's key, zcc's PARAM.<name> as
# checkpoints name it).
def _state_names(optimizer):
    import torch
    if isinstance(optimizer, (torch.optim.AdamW, torch.optim.Adam)):
        return (("exp_avg", "exp_avg"), ("exp_avg_sq", "exp_avg_sq"))
    if isinstance(optimizer, torch.optim.SGD):
        return (("momentum_buffer", "momentum"),)
    raise Error(f"sync: torch.optim.{type(optimizer).__name__} is not one "
                f"zcc runs")


def _module_tensors(session, module):
    """The module's parameters and buffers the session holds, by name."""
    held = set(session._parameters or ())
    tensors = dict(module.named_parameters())
    tensors.update(dict(module.named_buffers()))
    return {name: t for name, t in tensors.items() if name in held}


def _optimizer_params(optimizer, module, call):
    """(parameter, its name in the module) for each of the optimizer's."""
    names = {id(p): n for n, p in module.named_parameters()}
    for group in optimizer.param_groups:
        for p in group["params"]:
            name = names.get(id(p))
            if name is None:
                raise Error(f"{call}: the optimizer holds a parameter the "
                            f"module does not")
            yield p, name


def sync_to(session, module, optimizer):
    import torch
    with torch.no_grad():
        for name, tensor in _module_tensors(session, module).items():
            value = torch.from_numpy(session.read(name))
            tensor.copy_(value.reshape(tensor.shape).to(tensor.dtype))
    if optimizer is None:
        return
    steps = int(session.step_count)
    for p, name in _optimizer_params(optimizer, module, "sync_to"):
        state = optimizer.state[p]
        for key, ours in _state_names(optimizer):
            value = torch.from_numpy(session.read(f"{name}.{ours}"))
            state[key] = value.reshape(p.shape).to(p.dtype).clone()
        if "exp_avg" in state:
            state["step"] = torch.tensor(float(steps), dtype=torch.float32)


def sync_from(session, module, optimizer):
    import torch
    for name, tensor in _module_tensors(session, module).items():
        session.write(name, tensor.detach().cpu().double().numpy())
    if optimizer is None:
        return
    steps = None
    for p, name in _optimizer_params(optimizer, module, "sync_from"):
        state = optimizer.state.get(p, {})
        for key, ours in _state_names(optimizer):
            value = state.get(key)
            # No state yet (no step taken): zeros, as a fresh optimizer.
            array = (value.detach().cpu().double().numpy() if value is not
                     None else torch.zeros(p.shape, dtype=torch.float64).numpy())
            session.write(f"{name}.{ours}", array)
        if "step" in state:
            n = int(float(state["step"]))
            if steps is not None and n != steps:
                raise Error(f"sync_from: parameters at steps {steps} and "
                            f"{n}: zcc keeps one step count")
            steps = n
    if steps is not None:
        session.step_count = steps
