"""compile(fit=...): the microbatch size, accumulation and memory budget
chosen for a device. Every choice is checked against all the candidates,
each compiled here on its own: it fits, and no candidate that fits
recomputes fewer FLOPs (or as few with a larger microbatch). A fitted
session takes the global batch and trains as PyTorch does on it whole."""

import copy
import os
import sys

import numpy as np
import pytest
import torch

import zcc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "examples", "python"))
import nanogpt  # noqa: E402

BATCH = 8


def small_gpt():
    torch.manual_seed(0)
    model = nanogpt.GPT(vocab=128, sequence=16, width=64, heads=4, layers=2)
    data = nanogpt.batches(3, batch=BATCH, sequence=16, vocab=128)
    return model, data


def step_flops(compiled, microbatches):
    """(all, recomputed) FLOPs of one optimizer step."""
    total = recomputed = 0.0
    for name, e in compiled.memory_analysis()["entries"].items():
        w = {"train_step": 1, "microbatch": microbatches, "apply": 1}.get(name, 0)
        total += w * e["flops"]
        recomputed += w * e["recomputed_flops"]
    return total, recomputed


def candidates(model, x, y):
    """Each microbatch size's plain plan, compiled on its own."""
    out = {}
    for b in (8, 4, 2, 1):
        k = BATCH // b
        traced = zcc.from_torch(model, (x[:b],), (y[:b],), loss=nanogpt.lm_loss,
                                evaluate=False)
        opts = dict(accumulate=True, grad_scale=1.0 / k) if k > 1 else {}
        plain = traced.compile(optimizer=zcc.adamw(lr=1e-3), **opts)
        out[b] = (traced, opts, plain, plain.plan.fixed_device_bytes(0),
                  plain.memory_analysis()["arena"])
    return out


def fits_at(cands, fit):
    """{b: extra recomputed FLOPs per step} of the candidates that fit."""
    fitting = {}
    for b, (traced, opts, plain, other, arena) in cands.items():
        k = BATCH // b
        if other + arena <= fit:
            fitting[b] = 0.0
            continue
        if other >= fit:
            continue
        try:
            budgeted = traced.compile(optimizer=zcc.adamw(lr=1e-3),
                                      memory_budget=fit - other, **opts)
        except zcc.OutOfMemoryError:
            continue
        assert other + budgeted.memory_analysis()["arena"] <= fit
        fitting[b] = step_flops(budgeted, k)[1] - step_flops(plain, k)[1]
    return fitting


def test_each_choice_is_the_cheapest_that_fits():
    model, data = small_gpt()
    x, y = (torch.from_numpy(a) for a in data[0])
    cands = candidates(model, x, y)
    need = {b: c[3] + c[4] for b, c in cands.items()}
    # Smaller microbatches need less (their activations), though the
    # accumulators they add are persistent.
    assert need[1] < need[8], need
    fits = sorted({need[8], need[4], need[2], need[1],
                   (need[8] + need[4]) // 2, need[1] - 1,
                   (need[1] + min(c[3] for c in cands.values())) // 2})
    chosen_sizes = set()
    traced = zcc.from_torch(model, (x,), (y,), loss=nanogpt.lm_loss,
                            evaluate=False)
    for fit in fits:
        fitting = fits_at(cands, fit)
        if not fitting:
            with pytest.raises(zcc.OutOfMemoryError,
                               match="no microbatch size fits"):
                traced.compile(optimizer=zcc.adamw(lr=1e-3), fit=fit,
                               fit_reserve=0)
            chosen_sizes.add(None)
            continue
        compiled = traced.compile(optimizer=zcc.adamw(lr=1e-3), fit=fit,
                                  fit_reserve=0)
        report = compiled.fit_report
        b = report.chosen["microbatch"]
        chosen_sizes.add(b)
        assert b in fitting, (fit, b, fitting, str(report))
        assert report.chosen["microbatches"] == BATCH // b
        # It fits...
        other = compiled.plan.fixed_device_bytes(0)
        assert other + compiled.memory_analysis()["arena"] <= fit
        # ...and nothing that fits is cheaper, or as cheap and larger.
        for other_b, extra in fitting.items():
            assert extra >= fitting[b], (fit, b, other_b, fitting)
            if extra == fitting[b]:
                assert other_b <= b, (fit, b, other_b, fitting)
        assert report.chosen["extra_flops"] == pytest.approx(fitting[b])
        assert "*" in str(report)
    # The sizes exercised every outcome: the whole batch as it is, a
    # smaller microbatch, and nothing fitting.
    assert 8 in chosen_sizes and None in chosen_sizes
    assert chosen_sizes & {4, 2, 1}, chosen_sizes


def test_a_fitted_session_trains_on_the_global_batch_as_pytorch():
    model, data = small_gpt()
    x, y = (torch.from_numpy(a) for a in data[0])
    reference = copy.deepcopy(model).double()
    ref_opt = torch.optim.AdamW(reference.parameters(), lr=3e-3,
                                betas=(0.9, 0.95), weight_decay=0.0)
    imported = copy.deepcopy(model)
    traced = zcc.from_torch(imported, (x,), (y,), loss=nanogpt.lm_loss)
    opt = torch.optim.AdamW(imported.parameters(), lr=3e-3, betas=(0.9, 0.95),
                            weight_decay=0.0)
    compiled = traced.compile(optimizer=opt, microbatch=2)
    assert compiled.fit_report.chosen["microbatches"] == 4
    session = compiled.session(precision="f64")
    for k in range(6):
        bx, by = (torch.from_numpy(a) for a in data[k % len(data)])
        ref_opt.zero_grad()
        loss = nanogpt.lm_loss(reference(bx), by)
        loss.backward()
        ref_opt.step()
        # The global batch, as PyTorch takes it: 4 microbatches of 2.
        ours = session.step(bx.numpy(), by.numpy())
        assert ours == pytest.approx(loss.item(), rel=1e-9, abs=1e-12)
    # Eval on the global batch: the mean of its microbatches', the whole
    # batch's mean loss.
    bx, by = data[0]
    with torch.no_grad():
        expected = nanogpt.lm_loss(reference.eval()(torch.from_numpy(bx)),
                                   torch.from_numpy(by)).item()
    assert session.eval(bx, by) == pytest.approx(expected, rel=1e-9)
    # One microbatch's rows are still one call.
    assert np.isfinite(session.eval(bx[:2], by[:2]))


def test_bad_microbatches_are_clear_errors():
    model, data = small_gpt()
    x, y = (torch.from_numpy(a) for a in data[0])
    traced = zcc.from_torch(model, (x,), (y,), loss=nanogpt.lm_loss,
                            evaluate=False)
    with pytest.raises(zcc.Error, match="microbatch 3 does not divide the "
                       "examples' batch 8"):
        traced.compile(microbatch=3)
    with pytest.raises(zcc.Error, match="accumulate=False"):
        traced.compile(microbatch=4, accumulate=False)
    with pytest.raises(zcc.OutOfMemoryError) as error:
        traced.compile(fit="1MB")
    # The table names every size tried and why it did not fit.
    text = str(error.value)
    for b in ("8", "4", "2", "1"):
        assert f"  {b:>9s}  " in text, text
    assert "the other regions alone do not fit" in text
    # A step traced with zcc.trace keeps its batch: fit is a budget there.
    spec = zcc.trace(lambda x: (x * zcc.param("w", (4,))).sum(),
                     x=zcc.input((2, 4)))
    with pytest.raises(zcc.Error, match="needs a step from zcc.from_torch"):
        spec.compile(microbatch=1)


def test_zcc_divides_the_exported_program_as_compile_does(tmp_path):
    # The same step written out (Traced.ir) and given to zcc --microbatch
    # auto: rewritten at each size instead of imported again, chosen by the
    # same rule, at the same sizes.
    import re
    import subprocess
    from test_memory_timeline import tools_dir
    model, data = small_gpt()
    x, y = (torch.from_numpy(a) for a in data[0])
    traced = zcc.from_torch(model, (x,), (y,), loss=nanogpt.lm_loss,
                            evaluate=False)
    program = tmp_path / "gpt.mlir"
    program.write_text(traced.ir())
    cands = candidates(model, x, y)
    need = {b: c[3] + c[4] for b, c in cands.items()}
    for fit in sorted({need[8], need[4], need[2], (need[8] + need[4]) // 2}):
        ours = traced.compile(optimizer=zcc.adamw(lr=1e-3), fit=fit,
                              fit_reserve=0)
        run = subprocess.run(
            [os.path.join(tools_dir(), "zcc"), str(program), "--optimizer",
             "adamw", "--fit", str(fit), "--fit-reserve", "0", "--microbatch",
             "auto", "-o", str(tmp_path / "gpt.zplan")],
            capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        chosen = re.search(r"^\*\s+(\d+)\s+(\d+)\s+(as is|recomputing)",
                           run.stdout, re.M)
        assert chosen, run.stdout
        assert int(chosen.group(1)) == ours.fit_report.chosen["microbatch"], \
            (fit, run.stdout, str(ours.fit_report))
        assert chosen.group(3) == ours.fit_report.chosen["result"]


def test_a_fitted_sessions_fit_takes_the_global_batch():
    model, data = small_gpt()
    x, y = (torch.from_numpy(a) for a in data[0])
    traced = zcc.from_torch(model, (x,), (y,), loss=nanogpt.lm_loss,
                            evaluate=False)
    compiled = traced.compile(optimizer=zcc.adamw(lr=1e-3), microbatch=2)
    stepped = compiled.session()
    reference = [stepped.step(*data[k % len(data)]) for k in range(5)]
    losses = []
    fitted = compiled.session()
    fitted.fit(lambda k: data[k % len(data)], 5,
               report=lambda k, loss, metrics: losses.append(loss))
    assert losses == reference
