#!/usr/bin/env python3
"""Summarises an `ncu --csv --metrics gpu__time_duration.sum` log: device time
per step by kernel, largest first.

    ncu_summary.py LOG.csv STEPS [--top N]

Then the same by family (products, attention, element programs, ...):
zcc's kernels by their functor's name, cuBLAS's by its kernels' prefixes.
"""
import argparse
import csv
import io
import re
import sys


# (family, pattern on the kernel's name), first match wins. zcc's kernels
# are templates over their functor (zcc::runtime::device::...): matched by
# the functor's name wherever ncu's demangling puts it.
FAMILIES = [
    ("products (cuBLAS; attention's small ones included)",
     r"nvjet|gemm|xmma|cutlass|cublas"),
    ("column sums (bias and norm-weight gradients)",
     r"ChunkedColumns|NormGradColumns"),
    ("attention rows and gradients", r"\bAttention"),
    ("fused element programs", r"\bElementProgram"),
    ("element kernels and conversions",
     r"\b(Elementwise|Convert|Dropout|Fill|Scale|Unary|Binary)"),
    ("copies (head split/merge, concat, transpose)",
     r"\b(StridedCopy|ConcatPart|Copy|Transpose|Slice)"),
    ("reductions", r"\b(Reduce|MeanOf|Sum)"),
    ("layer and RMS norms", r"\b(LayerNorm|RmsNorm)"),
    ("loss", r"\bCrossEntropy"),
    ("optimizer", r"\b(Adamw|Adam|Sgd|Clip)"),
    ("embedding", r"\bEmbedding"),
]


def family(name):
    for label, pattern in FAMILIES:
        if re.search(pattern, name, re.IGNORECASE):
            return label
    return "other"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("steps", type=float)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    text = open(args.log, errors="replace").read()
    # ncu prints the program's own output and its ==PROF== lines before the CSV.
    start = text.find('"ID"')
    if start < 0:
        sys.exit(f"ncu_summary: no CSV header in {args.log}")
    rows = csv.DictReader(io.StringIO(text[start:]))
    total, count = {}, {}
    for row in rows:
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = re.sub(r"\s+", " ", row["Kernel Name"])
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "ns")
        scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0,
                 "ms": 1e3, "msecond": 1e3}.get(unit, 1e-3)
        total[name] = total.get(name, 0.0) + value * scale
        count[name] = count.get(name, 0) + 1
    all_us = sum(total.values()) / args.steps
    launches = sum(count.values()) / args.steps
    print(f"{launches:.0f} kernels and {all_us:.1f} us of kernel time per step\n")
    print("| kernel | per step | us per step | share |")
    print("|---|---:|---:|---:|")
    for name, us in sorted(total.items(), key=lambda kv: -kv[1])[: args.top]:
        short = name if len(name) <= 90 else name[:87] + "..."
        print(f"| `{short}` | {count[name] / args.steps:.1f} | "
              f"{us / args.steps:.1f} | {100 * us / args.steps / all_us:.1f}% |")
    families, launches_of = {}, {}
    for name, us in total.items():
        f = family(name)
        families[f] = families.get(f, 0.0) + us
        launches_of[f] = launches_of.get(f, 0) + count[name]
    print("\n| family | kernels per step | us per step | share |")
    print("|---|---:|---:|---:|")
    for f, us in sorted(families.items(), key=lambda kv: -kv[1]):
        print(f"| {f} | {launches_of[f] / args.steps:.0f} | {us / args.steps:.1f} | "
              f"{100 * us / args.steps / all_us:.1f}% |")


if __name__ == "__main__":
    main()
