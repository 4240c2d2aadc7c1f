#!/usr/bin/env python3
"""usage: make_npz.py OUT.npz [--bad-dtype]: writes a small MNIST-shaped
dataset for the MLP example without numpy: 64 rows of 784 float32 `images`
and int32 `labels`, each row its class's pattern plus noise (learnable), as
np.savez would (stored .npy members in a zip). --bad-dtype writes the labels
as float64 instead."""
import random
import struct
import sys
import zipfile


def npy(descr, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d, " % d for d in shape) if len(shape) > 1 else "%d," % shape[0])
    # Pad so that the data starts on a 64-byte boundary, as numpy does.
    total = 10 + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload


def main():
    rows, width, classes = 64, 784, 10
    rng = random.Random(1)
    patterns = [[rng.gauss(0, 0.1) for _ in range(width)] for _ in range(classes)]
    labels = [i % classes for i in range(rows)]
    images = []
    for label in labels:
        images.extend(p + rng.gauss(0, 1) for p in patterns[label])
    with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_STORED) as z:
        z.writestr("images.npy", npy("<f4", (rows, width), struct.pack("<%df" % len(images), *images)))
        if "--bad-dtype" in sys.argv:
            z.writestr("labels.npy", npy("<f8", (rows,), struct.pack("<%dd" % rows, *labels)))
        else:
            z.writestr("labels.npy", npy("<i4", (rows,), struct.pack("<%di" % rows, *labels)))


if __name__ == "__main__":
    main()
