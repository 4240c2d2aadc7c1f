#!/usr/bin/env python3
"""Summarises an `ncu --csv --metrics gpu__time_duration.sum` log: device time
per step by kernel, largest first.

    ncu_summary.py LOG.csv STEPS [--top N]
"""
import argparse
import csv
import io
import re
import sys


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


if __name__ == "__main__":
    main()
