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
    compile_one(traced, microbatches) judges one candidate: (its row, its
    Compiled or None); `options` are the caller's keywords."""
    batch = batch_of(traced._fit_examples)
    if microbatch is None:
        sizes = [b for b in range(batch, 0, -1) if batch % b == 0]
    else:
        if microbatch < 1 or batch % microbatch:
            raise Error(f"compile: microbatch {microbatch} does not divide "
                        f"the examples' batch {batch}")
        sizes = [microbatch]
    rows, compiled_of = [], {}
    for b in sizes:
        k = batch // b
        if k > 1 and options.get("accumulate") is False:
            raise Error("compile(fit=...): accumulate=False, but the batch "
                        f"of {batch} needs microbatches")
        candidate = traced if b == batch else traced._reimport(b)
        # zcc --microbatch's judgement of one size (zcc::fitCandidate).
        row, compiled = compile_one(candidate, k)
        rows.append(dict(microbatch=b, microbatches=k, **row))
        if compiled is not None:
            compiled_of[b] = compiled
        if row["result"] == "as is":
            break  # nothing smaller is chosen over it
    report = FitReport(fit, reserve, batch, rows)
    chosen = report.chosen
    if chosen is None:
        raise OutOfMemoryError(
            "compile(fit=...): no microbatch size fits:\n" + str(report))
    compiled = compiled_of[chosen["microbatch"]]
    compiled.fit_report = report
    compiled._split = (chosen["microbatches"], chosen["microbatch"])
    return compiled
