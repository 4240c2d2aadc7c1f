"""How close zt-remat's choices are to optimal: a lower bound on the FLOPs
any recompute set needs, solved exactly, against what zt-remat chose.

    PYTHONPATH=build/python .cache/py-venv/bin/python bench/memory/remat_bound.py [--out FILE] [--largest N] [--time-limit S]
    .cache/py-venv/bin/python bench/memory/remat_bound.py PROBLEM.json   # one file from zcc --remat-problem

zt-remat writes its problem (compile(remat_problem=PATH), zcc
--remat-problem=PATH; format zcc.remat-problem/v1, docs/passes.md): the
forward ops it may copy with their FLOPs, the positions whose live bytes are
above the budget with the bytes each op's saved values would free there, and
which ops a copy needs copied too. As a 0/1 program (x_o = 1: op o copied at
least once):

    minimize   sum_o flops_o x_o
    subject to sum_o freed_o,p x_o >= deficit_p   for every position p over the budget
               x_o <= x_o'                        when o's copy reads what only o' can give back
               x_o = 0                            when o's copy reads something nothing can

The copies' own bytes are left out and each op is paid once, so the optimum
is a lower bound on the FLOPs of every recompute set for the same schedule;
zt-remat's own choice must be a feasible point of the program (checked here,
so a wrong model fails loudly). The program is solved to optimality with
HiGHS (scipy.optimize.milp); the LP relaxation is printed beside it.
"""

import argparse
import itertools
import json
import os
import sys
import tempfile
import time

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

FORMAT = "zcc.remat-problem/v1"


def load(path):
    with open(path) as f:
        problem = json.load(f)
    if problem.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} file "
                         f"(format {problem.get('format')!r})")
    return problem


def violations(entry, chosen=None):
    """The constraints a set of ops (default: zt-remat's) breaks, as text;
    empty when it is a feasible point of the program. zt-remat's own choice
    is held to the peak it reached: when it ran out of values to recompute
    above the budget, each position must still have lost its bytes over
    that peak."""
    ops = entry["ops"]
    slack = 0
    if chosen is None:
        chosen = entry["zcc"]["ops"]
        slack = max(0, entry["zcc"]["peak"] - entry["budget"])
    chosen = set(chosen)
    out = []
    for i in sorted(chosen):
        if ops[i]["blocked"]:
            out.append(f"op {i} ({ops[i]['op']}) cannot be copied")
        out += [f"op {i} ({ops[i]['op']}) needs op {j} ({ops[j]['op']})"
                for j in ops[i]["needs"] if j not in chosen]
    for row in entry["rows"]:
        freed = sum(b for i, b in row["cover"] if i in chosen)
        if freed < row["deficit"] - slack:
            out.append(f"position {row['position']}: frees {freed} of "
                       f"{row['deficit'] - slack} bytes")
    return out


def solve(entry, time_limit=60.0, integral=True):
    """The program's optimum (integral) or its LP relaxation: a dict with
    `bound` (a valid lower bound: the optimum, or HiGHS's proven bound when
    the time ran out), `optimal`, `ops` (an optimal set), `seconds`; None
    when no recompute set reaches the budget."""
    ops = entry["ops"]
    n = len(ops)
    cost = np.array([op["flops"] for op in ops], dtype=float)
    upper = np.array([0.0 if op["blocked"] else 1.0 for op in ops])
    rows, cols, vals, lower = [], [], [], []
    for row in entry["rows"]:
        # Scaled so every cover row reads "fraction freed >= 1".
        for i, b in row["cover"]:
            rows.append(len(lower)), cols.append(i)
            vals.append(b / row["deficit"])
        lower.append(1.0)
    for i, op in enumerate(ops):
        for j in op["needs"]:
            rows += [len(lower), len(lower)]
            cols += [i, j]
            vals += [1.0, -1.0]
            lower.append(-np.inf)
    constraints = []
    if lower:
        matrix = coo_matrix((vals, (rows, cols)), shape=(len(lower), n))
        upper_rows = np.where(np.isinf(lower), 0.0, np.inf)
        constraints = [LinearConstraint(matrix.tocsr(), lower, upper_rows)]
    start = time.perf_counter()
    result = milp(cost, constraints=constraints, bounds=Bounds(0, upper),
                  integrality=np.full(n, 1 if integral else 0),
                  options={"time_limit": time_limit})
    seconds = time.perf_counter() - start
    if result.status == 2:
        return None
    optimal = result.status == 0
    if optimal:
        bound = result.fun
    elif integral and getattr(result, "mip_dual_bound", None) is not None:
        bound = result.mip_dual_bound
    else:
        raise RuntimeError(f"HiGHS: {result.message}")
    chosen = ([i for i in range(n) if result.x[i] > 0.5]
              if result.x is not None and integral else None)
    return {"bound": bound, "optimal": optimal, "ops": chosen,
            "seconds": seconds}


def brute_force(entry):
    """The program's optimum by trying every set (tests, a dozen ops)."""
    ops = entry["ops"]
    best = None
    for size in range(len(ops) + 1):
        for chosen in itertools.combinations(range(len(ops)), size):
            if not violations(entry, chosen):
                cost = sum(ops[i]["flops"] for i in chosen)
                best = cost if best is None else min(best, cost)
    return best


def compare(entry, time_limit):
    """zt-remat's FLOPs against the bound, after checking its choice is a
    feasible point (else the model is wrong and the bound means nothing)."""
    wrong = violations(entry)
    if wrong:
        raise AssertionError(
            f"entry {entry['entry']}: zt-remat's choice breaks the program "
            f"({len(wrong)}: {wrong[:3]}): the bound's model is wrong")
    exact = solve(entry, time_limit)
    relaxed = solve(entry, time_limit, integral=False)
    return {"zcc": entry["zcc"]["flops"], "exact": exact, "lp": relaxed}


def mib(n):
    return f"{n / 2**20:,.1f}"


def gflop(f):
    return f"{f / 1e9:,.3f}"


def bench(args):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import run as memory  # noqa: E402  (bench/memory/run.py's models)

    import zcc  # noqa: E402

    lines = [
        "`PYTHONPATH=build/python .cache/py-venv/bin/python "
        "bench/memory/remat_bound.py`",
        "",
        "zt-remat's recomputed FLOPs (its copies, each op counted per copy) "
        "against a lower bound on every recompute set for the same schedule "
        "(the covering program of bench/memory/remat_bound.py, solved to "
        f"optimality by HiGHS; time limit {args.time_limit:g} s), at budgets "
        "of 75% and 50% of the arena with no budget; the budget here is the "
        "live bytes zt-remat was asked to reach (zcc's last attempt, below "
        "the arena budget by the workspace and the planner's overshoot):",
        "",
        "| GPT (layers, width, heads, sequence, batch, vocabulary) | budget "
        "| live-bytes target, MiB | zt-remat GFLOP | lower bound GFLOP "
        "| zt-remat / bound | LP bound GFLOP | solve s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    print("\n".join(lines), flush=True)
    for config in memory.CONFIGS[:args.largest]:
        arena = memory.zcc_memory(config)["arena"]
        for fraction in (0.75, 0.5):
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "problem.json")
                try:
                    memory.zcc_traced(config).compile(
                        optimizer=zcc.adamw(lr=3e-4),
                        memory_budget=int(fraction * arena),
                        remat_problem=path)
                except zcc.Error:
                    pass  # not reached: the problem is still written
                problem = load(path)
            for entry in problem["entries"]:
                row = compare(entry, args.time_limit)
                exact, lp = row["exact"], row["lp"]
                if exact is None:
                    cells = ["unreachable", "-", "-", "-"]
                elif entry["zcc"]["exhausted"]:
                    cells = [gflop(exact["bound"]), "not reached", "-", "-"]
                else:
                    ratio = (row["zcc"] / exact["bound"]
                             if exact["bound"] > 0 else float("nan"))
                    cells = [gflop(exact["bound"])
                             + ("" if exact["optimal"] else " (time limit)"),
                             f"**{ratio:.2f}**", gflop(lp["bound"]),
                             f"{exact['seconds']:.1f}"]
                lines.append(
                    f"| {', '.join(map(str, config))} | {fraction:.0%} | "
                    f"{mib(entry['budget'])} | {gflop(row['zcc'])} | "
                    + " | ".join(cells) + " |")
                print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", nargs="?",
                        help="one zcc.remat-problem/v1 file to bound")
    parser.add_argument("--out", help="also write the table here")
    parser.add_argument("--largest", type=int, default=5,
                        help="configurations to run (of bench/memory/run.py's)")
    parser.add_argument("--time-limit", type=float, default=120.0,
                        help="seconds HiGHS may take per program")
    args = parser.parse_args()
    if not args.problem:
        return bench(args)
    for entry in load(args.problem)["entries"]:
        row = compare(entry, args.time_limit)
        exact = row["exact"]
        if exact is None:
            print(f"{entry['entry']}: no recompute set reaches the budget "
                  f"{entry['budget']}")
            continue
        print(f"{entry['entry']}: zt-remat {row['zcc']:.6g} FLOPs, lower "
              f"bound {exact['bound']:.6g} "
              f"({'optimal' if exact['optimal'] else 'time limit'}), "
              f"LP {row['lp']['bound']:.6g}, zt-remat / bound "
              f"{row['zcc'] / exact['bound'] if exact['bound'] else float('nan'):.3f}")


if __name__ == "__main__":
    main()
