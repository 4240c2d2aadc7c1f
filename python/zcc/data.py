"""Training data as language-model scripts keep it: a flat file of token ids.

nanoGPT writes its corpus as one array of uint16 token ids
(``np.array(ids, np.uint16).tofile("train.bin")``) and samples random
windows of the sequence length from a memory map. ``TokenFile`` reads such
a file the way ``zrun --data tokens:FILE[:uint16|uint32]`` does: row ``r``
of batch ``b`` is the window starting at ``window_start(seed, b, r, ...)``,
a function of those numbers alone, so a run's place in the data is its
batch number (which checkpoints record) and ``zrun`` and Python read the
same windows::

    data = zcc.data.TokenFile("train.bin", batch=8, seq=1024, seed=0)
    for b in range(steps):
        x, y = data.batch(b)           # [8, 1024] inputs, next tokens
        session.step(x, y)
"""

import os

import numpy as np

__all__ = ["TokenFile", "window_start", "write_tokens"]

_MASK = (1 << 64) - 1
# An eval entry's batches start here (zrun's convention for held-out data).
HELD_OUT = 1 << 40


def _splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def window_start(seed, batch, row, tokens, length):
    """The first token of row `row`'s window in batch `batch` of a file of
    `tokens` tokens: in [0, tokens - length - 1], so the window and the
    token after it fit (lib/Runtime/Data/TokenData.h's tokenWindowStart)."""
    h = _splitmix64((_splitmix64((_splitmix64(seed & _MASK) + batch) & _MASK)
                     + row) & _MASK)
    return h % (tokens - length)


def write_tokens(path, ids, dtype="uint16"):
    """Writes token ids as a token file (nanoGPT's train.bin layout)."""
    ids = np.asarray(ids)
    info = np.iinfo(dtype)
    if ids.size and (ids.min() < 0 or ids.max() > info.max):
        raise ValueError(f"write_tokens: ids in [{ids.min()}, {ids.max()}] "
                         f"do not fit {dtype}")
    ids.astype(dtype).tofile(os.fspath(path))


class TokenFile:
    """Batches of random windows of a token file, memory-mapped.

    `batch` rows of `seq` tokens each; `held_out=True` reads the windows
    zrun gives an eval entry (batch numbers from 2^40 on: the same file
    sampled apart from training's batches). `index_dtype` is the inputs'
    (int32, as zcc's labels are by default, or int64)."""

    def __init__(self, path, batch, seq, seed=0, dtype="uint16",
                 held_out=False, index_dtype=np.int32):
        if dtype not in ("uint16", "uint32"):
            raise ValueError(f"TokenFile: dtype is uint16 or uint32, not {dtype!r}")
        self.path = os.fspath(path)
        width = np.dtype(dtype).itemsize
        size = os.path.getsize(self.path)
        if size % width:
            raise ValueError(f"token file {self.path} is {size} bytes, not a "
                             f"whole number of {dtype} tokens")
        self.tokens = size // width
        if self.tokens < seq + 2:
            raise ValueError(f"token file {self.path} holds {self.tokens} "
                             f"tokens; a window of {seq} and the token after "
                             f"it need at least {seq + 2}")
        self.rows, self.seq, self.seed = int(batch), int(seq), int(seed)
        self.first = HELD_OUT if held_out else 0
        self.index_dtype = np.dtype(index_dtype)
        self.ids = np.memmap(self.path, dtype=dtype, mode="r")

    def __len__(self):
        """An epoch's batches: the file's tokens over a batch's."""
        return max(1, self.tokens // (self.rows * self.seq))

    def starts(self, number):
        """The rows' window starts of batch `number`."""
        return [window_start(self.seed, self.first + number, r, self.tokens,
                             self.seq) for r in range(self.rows)]

    def batch(self, number):
        """Batch `number`: (inputs, labels), each [batch, seq]; the labels
        are the inputs' next tokens."""
        x = np.empty((self.rows, self.seq), self.index_dtype)
        y = np.empty((self.rows, self.seq), self.index_dtype)
        for r, start in enumerate(self.starts(number)):
            x[r] = self.ids[start:start + self.seq]
            y[r] = self.ids[start + 1:start + 1 + self.seq]
        return x, y

    def __iter__(self):
        """Batches 0, 1, ... without end (random windows: no epochs)."""
        number = 0
        while True:
            yield self.batch(number)
            number += 1
