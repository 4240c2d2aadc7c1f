"""Random-program differential testing (random_programs.py): 500 programs
agree across modes, precisions, NumPy and finite differences; a planted
compiler bug is caught."""

import collections

import random_programs as rp


def test_500_random_programs_agree():
    failures = {}
    kinds = collections.Counter()
    for seed in range(500):
        prog = rp.generate(seed)
        kinds.update(op[0] if op[0] not in ("unary", "binary", "reduce")
                     else f"{op[0]}:{op[1]}" for op in prog["code"])
        problems = rp.check(prog)
        if problems:
            failures[seed] = problems
    assert not failures, failures
    # The programs cover the op set they are drawn from.
    for kind in ["matmul", "layer_norm", "rms_norm", "softmax", "log_softmax",
                 "scale", "view", "slice", "attention", "dropout", "embedding"] + \
            [f"unary:{u}" for u in rp.UNARY] + [f"binary:{b}" for b in rp.BINARY] + \
            [f"reduce:{r}" for r in ("sum", "mean", "max")]:
        assert kinds[kind] > 0, kind


def test_a_planted_in_place_bug_is_caught():
    # The compiler writes results over operands that are still read later:
    # a wrong plan every plan check accepts (the loader, the overlap
    # checker, poison mode). The driver's independent references see it.
    caught = [seed for seed in range(60)
              if rp.check(rp.generate(seed), plant_bug=True)]
    assert len(caught) >= 10, caught
    # And without the bug the same programs pass.
    assert not any(rp.check(rp.generate(seed)) for seed in caught)
