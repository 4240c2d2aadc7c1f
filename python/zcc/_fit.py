"""compile(fit=...) for a step from zcc.from_torch: the microbatch size,
accumulation count and memory budget that fit a device.

Each microbatch size dividing the example batch (the global batch), largest
first, is imported again and compiled as it is; the first whose regions fit
the device is the choice (nothing recomputed, the largest such size).
Sizes that do not fit as they are get the budget the device leaves their
arena, and are kept when recomputation reaches it. Without a size that fits
as it is, the choice is the one recomputing the fewest FLOPs per step (a
tie: the larger size); without any, OutOfMemoryError with the table."""

from . import _zcc
from ._zcc import Error, OutOfMemoryError


def batch_of(examples):
    """The global batch: the first example's leading size. Every example's
    leading size is a multiple of it (labels flattened to [batch * seq]),
    so a microbatch is the same share of each."""
    sizes = []
    for i, t in enumerate(examples):
        shape = tuple(getattr(t, "shape", ()))
        if not shape:
            raise Error(f"compile(fit=...): example {i} has no batch "
                        "dimension (shape ()): microbatches split every "
                        "input and label along its first dimension")
        sizes.append(shape[0])
    batch = sizes[0]
    for i, n in enumerate(sizes):
        if n % batch:
            raise Error(f"compile(fit=...): example {i}'s first dimension "
                        f"({n}) is not a multiple of the batch ({batch}, the "
                        "first example's): microbatches split every input "
                        "and label along it")
    return batch


def microbatch_of(examples, microbatch):
    """The examples' first `microbatch` of the global batch's rows."""
    batch = batch_of(examples)
    return tuple(t[:t.shape[0] // batch * microbatch] for t in examples)


class FitReport:
    """What compile(fit=...) tried and chose: `rows` (a dict per microbatch
    size tried: microbatch, microbatches, result "as is", "recomputing" or
    "no", arena, other (every other region and the reserve), extra_flops
    (recomputation's FLOPs per step beyond the plan's own), extra_share (of
    the step's), why), `chosen` (the row taken, or None) and str() as a
    table. The rule and the table are zcc --microbatch's (C++)."""

    def __init__(self, fit, reserve, batch, rows):
        self.fit, self.reserve, self.batch, self.rows = fit, reserve, batch, rows
        index, self._text = _zcc.fit_choice(
            fit, reserve, batch,
            [(r["microbatch"], r["microbatches"], r["result"], r["arena"],
              r["other"], r["extra_flops"], r["extra_share"], r["why"])
             for r in rows])
        self.chosen = rows[index] if index >= 0 else None

    def __str__(self):
        return self._text.rstrip("\n")


def choose(traced, fit, reserve, microbatch, compile_one, options):
    """The Compiled of the choice, with its report as `fit_report`.
    compile_one(traced, options) compiles one candidate; `options` are the
    caller's keywords (fit and fit_reserve taken out)."""
    batch = batch_of(traced._fit_examples)
    if microbatch is None:
        sizes = [b for b in range(batch, 0, -1) if batch % b == 0]
    else:
        if microbatch < 1 or batch % microbatch:
            raise Error(f"compile: microbatch {microbatch} does not divide "
                        f"the examples' batch {batch}")
        sizes = [microbatch]
    limit = fit if fit > 0 else float("inf")  # a microbatch, no device
    rows, compiled_of = [], {}
    scale = options.get("grad_scale") or 1.0
    for b in sizes:
        k = batch // b
        row = {"microbatch": b, "microbatches": k, "result": "no",
               "arena": 0, "other": 0, "extra_flops": 0.0,
               "extra_share": 0.0, "why": ""}
        rows.append(row)
        candidate = traced if b == batch else traced._reimport(b)
        opts = dict(options)
        if k > 1:
            if options.get("accumulate") is False:
                raise Error("compile(fit=...): accumulate=False, but the "
                            f"batch of {batch} needs microbatches")
            # The accumulated gradient is the mean of the microbatches',
            # the global batch's for a loss that is a mean.
            opts["accumulate"] = True
            opts["grad_scale"] = scale / k
        plain = compile_one(candidate, opts)
        other = plain.plan.fixed_device_bytes(reserve)
        arena = plain.memory_analysis()["arena"]
        row.update(arena=arena, other=other)
        if other + arena <= limit:
            row["result"] = "as is"
            compiled_of[b] = plain
            break  # nothing smaller is chosen over it
        if other >= limit:
            row["why"] = "the other regions alone do not fit"
            continue
        try:
            budgeted = compile_one(candidate,
                                   dict(opts, memory_budget=fit - other))
        except OutOfMemoryError:
            row["why"] = "not even recomputing all it can"
            continue
        total, recomputed = budgeted.plan.step_flops(k)
        _, plain_recomputed = plain.plan.step_flops(k)
        row.update(result="recomputing",
                   arena=budgeted.memory_analysis()["arena"],
                   extra_flops=recomputed - plain_recomputed,
                   extra_share=(recomputed - plain_recomputed) / total
                   if total else 0.0)
        compiled_of[b] = budgeted
    report = FitReport(fit, reserve, batch, rows)
    chosen = report.chosen
    if chosen is None:
        raise OutOfMemoryError(
            "compile(fit=...): no microbatch size fits:\n" + str(report))
    compiled = compiled_of[chosen["microbatch"]]
    compiled.fit_report = report
    compiled._split = (chosen["microbatches"], chosen["microbatch"])
    return compiled
