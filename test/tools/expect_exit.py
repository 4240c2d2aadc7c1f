#!/usr/bin/env python3
"""usage: expect_exit.py CODE COMMAND...: runs COMMAND, passes its output
through, and exits 0 only if COMMAND exited with CODE (lit's `not` only tells
zero from non-zero)."""
import subprocess
import sys

expected = int(sys.argv[1])
code = subprocess.run(sys.argv[2:]).returncode
if code != expected:
    print(f"expect_exit: {' '.join(sys.argv[2:])} exited {code}, expected {expected}", file=sys.stderr)
    sys.exit(1)
