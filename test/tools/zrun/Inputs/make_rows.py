#!/usr/bin/env python3
"""usage: make_rows.py OUT.npz ZERO_ROW: 40 rows of 8 positive float32
features `x` and int32 `labels` (3 classes), as np.savez writes them, with
row ZERO_ROW all zeros (a division by zero for normalized.mlir)."""
import os
import random
import struct
import sys
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from make_npz import npy  # noqa: E402

rows, width = 40, 8
zero = int(sys.argv[2])
rng = random.Random(3)
labels = [i % 3 for i in range(rows)]
x = []
for r in range(rows):
    x.extend(0.0 if r == zero else rng.uniform(0.5, 1.5) + (c % 3 == labels[r])
             for c in range(width))
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_STORED) as z:
    z.writestr("x.npy", npy("<f4", (rows, width), struct.pack("<%df" % len(x), *x)))
    z.writestr("labels.npy", npy("<i4", (rows,), struct.pack("<%di" % rows, *labels)))
