"""Token files (zcc.data.TokenFile, zrun --data tokens:FILE): the batches are
nanoGPT's get_batch (random windows, targets one token on) with zcc's
seeded window starts; Python and zrun read the same windows, so training
from Python on TokenFile batches gives zrun's losses bit for bit, and a
resumed run reads the windows the uninterrupted one did."""
import os
import subprocess

import numpy as np
import pytest

import zcc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "gpt_block.mlir")
BATCH, SEQ, VOCAB = 2, 16, 128  # the example's [2, 16] tokens of 128


def tools_dir():
    bin_dir = os.environ.get("ZCC_BIN_DIR")
    if bin_dir is None:
        bin_dir = os.path.join(ROOT, "build", "bin")
        if not os.path.exists(os.path.join(bin_dir, "zrun")):
            pytest.skip("zrun is not built in build/bin (set ZCC_BIN_DIR)")
    return bin_dir


def get_batch(data, seed, number, batch, seq):
    """nanoGPT's get_batch, written again from its definition, with zcc's
    generator in place of torch.randint: a SplitMix64 hash of (seed, batch
    number, row) modulo the number of window starts."""
    mask = (1 << 64) - 1

    def mix(x):
        x = (x + 0x9E3779B97F4A7C15) & mask
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
        return x ^ (x >> 31)

    ix = [mix((mix((mix(seed) + number) & mask) + row) & mask) % (len(data) - seq)
          for row in range(batch)]
    x = np.stack([data[i:i + seq].astype(np.int64) for i in ix])
    y = np.stack([data[i + 1:i + 1 + seq].astype(np.int64) for i in ix])
    return x, y


@pytest.fixture
def token_file(tmp_path):
    ids = np.random.default_rng(5).integers(0, VOCAB, size=5000)
    path = tmp_path / "train.bin"
    zcc.data.write_tokens(path, ids)
    return path, ids.astype(np.uint16)


def test_batches_are_get_batchs_windows(token_file):
    path, ids = token_file
    for seed in (0, 7):
        data = zcc.data.TokenFile(path, batch=4, seq=32, seed=seed)
        assert len(data) == 5000 // (4 * 32)
        for number in (0, 1, 99, 1 << 33):
            x, y = data.batch(number)
            want_x, want_y = get_batch(ids, seed, number, 4, 32)
            np.testing.assert_array_equal(x, want_x)
            np.testing.assert_array_equal(y, want_y)
            assert x.dtype == np.int32
            # y is x one token on, in the file
            np.testing.assert_array_equal(x[:, 1:], y[:, :-1])
    # Different seeds, different windows.
    a = zcc.data.TokenFile(path, 4, 32, seed=0).batch(0)[0]
    b = zcc.data.TokenFile(path, 4, 32, seed=1).batch(0)[0]
    assert not np.array_equal(a, b)


def test_bad_files_are_named(tmp_path):
    odd = tmp_path / "odd.bin"
    odd.write_bytes(bytes(301))
    with pytest.raises(ValueError, match="301 bytes, not a whole number of uint16"):
        zcc.data.TokenFile(odd, 2, 16)
    short = tmp_path / "short.bin"
    short.write_bytes(bytes(20))
    with pytest.raises(ValueError, match="holds 10 tokens; a window of 16"):
        zcc.data.TokenFile(short, 2, 16)
    with pytest.raises(ValueError, match="do not fit uint16"):
        zcc.data.write_tokens(tmp_path / "big.bin", [70000])


def test_python_and_zrun_read_the_same_windows(token_file, tmp_path):
    path, _ = token_file
    with open(EXAMPLE) as f:
        compiled = zcc.compile_mlir(f.read(), optimizer=zcc.adamw(lr=3e-3))
    plan = tmp_path / "gpt.zplan"
    compiled.save(plan)
    out = subprocess.run(
        [os.path.join(tools_dir(), "zrun"), str(plan), "--data", f"tokens:{path}",
         "--steps", "8", "--seed", "3", "--trace"],
        check=True, capture_output=True, text=True).stdout
    zrun_bits = [line.split()[5] for line in out.splitlines()
                 if line.startswith("step ")]
    assert len(zrun_bits) == 8
    session = compiled.session(seed=3)
    data = zcc.data.TokenFile(path, batch=BATCH, seq=SEQ, seed=3)
    python_bits = []
    for number in range(8):
        loss = session.step(*data.batch(number))
        python_bits.append(f"0x{np.float32(loss).view(np.uint32):08x}")
    assert python_bits == zrun_bits
