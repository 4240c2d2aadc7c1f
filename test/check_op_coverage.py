#!/usr/bin/env python3
"""Fails when a zt op has no case in the round-trip test.

The op list comes from the ODS-generated reference (build/docs/ZT/ZT.md), so a
new op added to ZTOps.td without a round-trip case fails this test.
usage: check_op_coverage.py GENERATED_DOC ROUND_TRIP_TEST [ELEMENT_OPS_TD
       [OPS_TD]]

The element ops (ZTElementOps.td, generated from their rows) are left out:
ZTDialectTest's EveryElementRowRoundTrips round-trips every row. So are the
ops checked by their kernel's rule (ZT_BuiltByName in OPS_TD), which
EveryInferredOpRoundTrips round-trips on their kernel cases.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from built_by_name import built_by_name  # noqa: E402


def main() -> int:
    doc_path, test_path = sys.argv[1:3]
    with open(doc_path) as f:
        ops = re.findall(r"^### `(zt\.\w+)`", f.read(), re.M)
    if len(sys.argv) > 3:
        with open(sys.argv[3]) as f:
            rows = re.findall(r'^def ZT_\w+Op : (ZT_\w+)<"(\w+)"', f.read(), re.M)
        if not rows:
            print(f"error: no element ops found in {sys.argv[3]}")
            return 1
        generated = {"zt." + name + ("_grad" if base == "ZT_UnaryGradOp" else "")
                     for base, name in rows}
        ops = [op for op in ops if op not in generated]
    if len(sys.argv) > 4:
        with open(sys.argv[4]) as f:
            ruled = {"zt." + name for name in built_by_name(f.read())}
        ops = [op for op in ops if op not in ruled]
    with open(test_path) as f:
        # Ops used in the test body, not in comments or CHECK lines.
        body = "\n".join(l for l in f if not l.lstrip().startswith("//"))
    if not ops:
        print(f"error: no ops found in {doc_path}")
        return 1
    missing = [op for op in ops if not re.search(re.escape(op) + r"\b", body)]
    for op in missing:
        print(f"error: {op} has no case in {test_path}")
    print(f"{len(ops) - len(missing)} of {len(ops)} zt ops covered by the round-trip test")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
