#!/usr/bin/env python3
"""Fails when a zt op has no gradient check.

usage: check_coverage.py ZTOps.td GRADCHECK_DIR

The op list comes from ZTOps.td, so an op added there without a case here
fails. Every forward op must appear as `zt.<name>` in the body of some
GRADCHECK_DIR/*.mlir file; every fused backward op (`*_grad`) must appear in
`zt-opt -zt-autodiff` of those files (zt-opt from PATH), since only then does
a gradient check run it. scale (emitted for mean), the optimizer updates
(sgd, adamw, clipping's sum_squares and the learning-rate schedule's
lr_schedule) and the data-parallel ops (all_reduce, and ZeRO-1's
reduce_scatter, all_gather and shard) are not forward ops of a loss and are
not required, nor are zt-fuse-elementwise's fused and zt-fuse-classifier's
softmax_cross_entropy_fused (made after zt-autodiff; the gradient checks
run them, and their bits are the unfused ops'). Nor are the ops built by their kernel's rule
(ZT_BuiltByName): zcc-capture-tests' InferredOps.EveryForwardOp...
gradient-checks each on its kernel case.
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from built_by_name import built_by_name  # noqa: E402

NOT_FORWARD = {"scale", "sgd", "adamw", "sum_squares", "lr_schedule",
               "all_reduce",
               "reduce_scatter", "all_gather", "shard", "pack", "fused",
               "softmax_cross_entropy_fused"}
# bf16 rounding has no finite-difference derivative: convert's rule (the
# conversion back) is checked against the f32 program's gradients instead
# (test/python/test_mixed_precision.py, random_programs.py --precision bf16).
NO_FINITE_DIFFERENCES = {"convert"}


def op_names(td_text):
    """Mnemonics of every `def ZT_...Op`, with the suffix its class adds
    (ZT_UnaryGradOp<"relu", ...> is `relu_grad`)."""
    suffix = {"ZT_Op": ""}
    for m in re.finditer(r'^class (ZT_\w+)<[^{;]*?>\s*:\s*ZT_Op<\s*(\w+)(?:\s*#\s*"(\w*)")?',
                         td_text, re.M | re.S):
        suffix[m.group(1)] = m.group(3) or ""
    names = []
    for m in re.finditer(r'^def ZT_\w+Op\s*:\s*(ZT_\w+)<\s*"(\w+)"', td_text, re.M):
        base, name = m.group(1), m.group(2)
        if base not in suffix:
            raise SystemExit(f"error: op '{name}' derives from {base}, whose mnemonic rule is unknown")
        names.append(name + suffix[base])
    return names


def uses(text, name):
    return re.search(r"(?<![\w.])zt\." + re.escape(name) + r"\b(?!\s*=)", text) is not None


def main():
    td_path, test_dir = sys.argv[1:3]
    with open(td_path) as f:
        td = f.read()
    ruled = built_by_name(td)
    ops = [op for op in op_names(td) if op not in ruled]
    grads = [op for op in ops if op.endswith("_grad")]
    forward = [op for op in ops if op not in grads and op not in NOT_FORWARD
               and op not in NO_FINITE_DIFFERENCES]
    if not forward or not grads:
        print(f"error: found {len(forward)} forward and {len(grads)} backward ops in {td_path}")
        return 1

    tests = sorted(glob.glob(os.path.join(test_dir, "*.mlir")))
    bodies, differentiated = [], []
    for path in tests:
        with open(path) as f:
            # Ops in the function, not in comments or CHECK lines.
            bodies.append("\n".join(l for l in f if not l.lstrip().startswith("//")))
        run = subprocess.run(["zt-opt", path, "-zt-autodiff"], capture_output=True, text=True)
        if run.returncode != 0:
            print(f"error: zt-opt -zt-autodiff failed on {path}:\n{run.stderr}")
            return 1
        differentiated.append(run.stdout)
    body, backward = "\n".join(bodies), "\n".join(differentiated)

    missing = [op for op in forward if not uses(body, op)]
    unexercised = [op for op in grads if not uses(backward, op)]
    for op in missing:
        print(f"missing: zt.{op} is used by no gradient check in {test_dir}")
    for op in unexercised:
        print(f"missing: zt.{op} is emitted by zt-autodiff for no gradient check in {test_dir}")
    print(f"{len(forward) - len(missing)} of {len(forward)} forward ops used, "
          f"{len(grads) - len(unexercised)} of {len(grads)} backward ops exercised, "
          f"by {len(tests)} gradient checks")
    return 1 if missing or unexercised else 0


if __name__ == "__main__":
    sys.exit(main())
