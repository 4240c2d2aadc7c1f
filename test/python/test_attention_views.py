"""Attention views (on by default; zcc --attention-views=false copies): the
heads of the fused q/k/v projection are read where they lie (the slices and
transposes before zt.attention are strided views, no launch), and attention's
result and gradients are written in the layout their transposes had (the
transposes after it are no launch). A plan with views gives the bits of the
plan that copies, on the CPU (f32, bf16, the f64 reference), the emulator and
in every memory mode, with fewer launches and an arena no larger."""

import os
import subprocess

import pytest

from test_fusion import assert_same_bits, kernels, plans_with_and_without
from test_memory_timeline import tools_dir
from test_mixed_precision import EXAMPLE


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_views_give_the_copies_bits(tmp_path, precision):
    (viewed, viewed_memory), (copied, copied_memory) = plans_with_and_without(
        tmp_path, precision, "--attention-views=false")
    with_views, without = kernels(viewed_memory), kernels(copied_memory)
    # The example's two blocks: forward 3 slices, 3 head transposes and the
    # result's; backward the result gradient's, the three gradients' and
    # the recomputed result's transpose, and the gradients' concat (written
    # where it puts them).
    for kernel, gone in (("slice", 6), ("transpose", 2 * 9), ("concat", 2)):
        assert without.count(kernel) - with_views.count(kernel) == gone, \
            (kernel, without.count(kernel), with_views.count(kernel))
    assert with_views.count("transpose") == with_views.count("concat") == 0
    assert viewed_memory["arena_bytes"] <= copied_memory["arena_bytes"]
    print(f"{precision}: {len(without)} -> {len(with_views)} launches; arena "
          f"{copied_memory['arena_bytes']} -> {viewed_memory['arena_bytes']}")
    assert_same_bits(viewed, copied, precision)


def test_report_counts_the_views(tmp_path):
    plan = str(tmp_path / "views.zplan")
    run = subprocess.run([os.path.join(tools_dir(), "zcc"), EXAMPLE, "-o",
                          plan, "--optimizer", "adamw", "--report"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    # Per block: q, k, v and the result (which the backward reads too),
    # the result's gradient and the three gradients.
    line = next(l for l in run.stdout.splitlines() if "views" in l)
    assert line.split()[1] == "16", line
