"""examples/python/train_text.py at a tiny size: a transformers GPT-2 trained
by zcc on the project's docs as bytes (token files, the script's AdamW and
LambdaLR read by zcc), its loss falls, the run resumes from its checkpoint,
and the weights written back into the module generate text."""
import os
import sys

import pytest

pytest.importorskip("transformers")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "examples", "python"))
import train_text  # noqa: E402

TINY = ["--batch", "4", "--seq", "32", "--width", "32", "--heads", "2",
        "--layers", "1", "--eval-every", "40", "--eval-batches", "2",
        "--print-every", "20", "--lr", "3e-3"]


def test_the_example_trains_resumes_and_generates(tmp_path, capsys):
    out = str(tmp_path)
    losses, text = train_text.main(TINY + ["--steps", "80", "--out", out])
    assert len(losses) == 80
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    assert last < first - 1.0, (first, last)  # bytes: 5.5 at the start
    printed = capsys.readouterr().out
    assert "eval after step 40: validation loss" in printed
    assert "tok/s" in printed
    assert text.startswith("zcc is ") and len(text) > len("zcc is ")
    # Run again to 100: it resumes at 80 from the checkpoint.
    losses, _ = train_text.main(TINY + ["--steps", "100", "--out", out])
    assert "resumed at step 80" in capsys.readouterr().out
    assert len(losses) == 20
