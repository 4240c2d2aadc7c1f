#!/usr/bin/env python3
"""Fails when compiler code lists op classes where a property belongs.

An op's properties (runs in place, cheap to recompute, keeps bf16, ...) are
stated once, in its row or kernel entry (zcc/Runtime/Plan/OpTraits.h), and
passes read them with zt::traitsOf. A list such as `isa<AddOp, SubOp, ...>`
in a pass is a second copy that a new op silently misses, so this test fails
on any `isa<`, `dyn_cast<` or `TypeSwitch` case naming two or more op
classes at once.
usage: check_no_op_lists.py SOURCE_DIR...
"""
import pathlib
import re
import sys

LIST = re.compile(r"\b(?:isa|isa_and_nonnull|dyn_cast|isa_and_present)<\s*"
                  r"(?:\w+::)*\w+Op\s*,\s*(?:\w+::)*\w+Op\b")


def main() -> int:
    found = []
    for root in sys.argv[1:]:
        for path in sorted(pathlib.Path(root).rglob("*.cpp")):
            text = path.read_text()
            for m in LIST.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{path}:{line}: {m.group(0)}...")
    for f in found:
        print(f"error: {f}: a list of op classes; state the property in "
              "the op's row or kernel entry (OpTraits.h) and read "
              "zt::traitsOf")
    if not found:
        print(f"ok: no op-class lists in {len(sys.argv) - 1} directories")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
