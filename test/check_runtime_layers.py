#!/usr/bin/env python3
"""Fails on an upward include between the runtime's folders.

The runtime is a stack (docs/runtime.md, "Layers"): a folder may include its
own files and those of the folders below it, never above, so each layer
builds and tests without the ones over it. The files directly in
zcc/Runtime (Status.h, Communicator.h, zrt.h) are the support layer at the
bottom; below it only the planner library (zcc/Planner), and nothing of the
compiler.
usage: check_runtime_layers.py SOURCE_ROOT
"""
import pathlib
import re
import sys

# Bottom to top.
LAYERS = ["Support", "Plan", "Kernels", "IO", "Executors", "Session", "Data",
          "Training", "Distributed", "Testing", "CApi"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(relative: pathlib.PurePosixPath) -> str:
    """The layer of a path relative to zcc/Runtime or lib/Runtime."""
    return relative.parts[0] if len(relative.parts) > 1 else "Support"


def included_folder(include: str, own: str):
    """The layer an include names, or None for one outside the runtime."""
    if include.startswith("zcc/Runtime/"):
        return folder_of(pathlib.PurePosixPath(include[len("zcc/Runtime/"):]))
    if include.startswith("zcc/Planner/"):
        return None  # the planner library (MLIR-free), below the runtime
    if include.startswith("zcc/"):
        return "outside"  # the compiler's headers: never from the runtime
    first = include.split("/")[0]
    if "/" in include and first in LAYERS:
        return first  # lib/Runtime's private headers, from lib/Runtime
    return own  # a header beside the file (or a system-style local one)


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    rank = {name: i for i, name in enumerate(LAYERS)}
    errors, files = [], 0
    for base in (root / "include/zcc/Runtime", root / "lib/Runtime"):
        for path in sorted(base.rglob("*")):
            if path.suffix not in (".h", ".cpp", ".cu", ".inc"):
                continue
            files += 1
            own = folder_of(pathlib.PurePosixPath(path.relative_to(base).as_posix()))
            if own not in rank:
                errors.append(f"{path}: folder '{own}' is not a layer of "
                              "check_runtime_layers.py")
                continue
            text = path.read_text()
            for m in INCLUDE.finditer(text):
                target = included_folder(m.group(1), own)
                line = text.count("\n", 0, m.start()) + 1
                if target == "outside":
                    errors.append(f"{path}:{line}: includes {m.group(1)}, "
                                  "outside the runtime")
                elif target in rank and rank[target] > rank[own]:
                    errors.append(f"{path}:{line}: {own} includes "
                                  f"{m.group(1)} of {target}, a layer above")
    for e in errors:
        print("error: " + e)
    if not errors:
        print(f"ok: {files} runtime files include only their own and lower "
              f"layers ({' < '.join(LAYERS)})")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
