"""compile(optimizer=<torch optimizer>, lr_schedule=<torch scheduler>): the
script's own optimizer and scheduler read, not restated, train as PyTorch
running that script; what zcc cannot express is one clear error."""

import copy
import os
import sys
import warnings

import numpy as np
import pytest
import torch
import torch.optim.lr_scheduler as S

import zcc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "examples", "python"))
import nanogpt  # noqa: E402


def small_gpt():
    torch.manual_seed(0)
    return (nanogpt.GPT(vocab=128, sequence=16, width=64, heads=4, layers=2),
            nanogpt.batches(4, batch=4, sequence=16, vocab=128))


def nanogpt_recipe(model, lr=3e-3):
    """nanoGPT's train.py as written: AdamW over configure_optimizers' two
    groups (weight decay on 2-D parameters only), betas (0.9, 0.95), a
    LambdaLR of get_lr (4 warmup steps, cosine to lr / 10 at step 16)."""
    groups = nanogpt.param_groups(model, 0.1, 2)
    optimizer = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95))
    schedule = dict(warmup_steps=4, decay="cosine", decay_steps=16,
                    min_lr=lr / 10)
    scheduler = S.LambdaLR(optimizer,
                           lambda k: nanogpt.get_lr(k, lr, **schedule) / lr)
    return optimizer, scheduler


def warmup_cosine_sgd(model, lr=0.3):
    """SGD with Nesterov momentum and weight decay on the weights, under a
    SequentialLR: a LinearLR warmup of 3 steps, then CosineAnnealingLR to
    step 20 (PyTorch's rises again after T_max; zcc's holds, and warns)."""
    groups = nanogpt.param_groups(model, 1e-3, 2)
    optimizer = torch.optim.SGD(groups, lr=lr, momentum=0.9, nesterov=True)
    scheduler = S.SequentialLR(
        optimizer, [S.LinearLR(optimizer, start_factor=1 / 4, total_iters=3),
                    S.CosineAnnealingLR(optimizer, T_max=17, eta_min=lr / 20)],
        milestones=[3])
    return optimizer, scheduler


def train_both(recipe, precision, steps=20, clip=1.0):
    """zcc compiled from the recipe's optimizer and scheduler, and PyTorch
    running the recipe on a copy: each step's losses."""
    model, data = small_gpt()
    dtype = torch.float64 if precision == "f64" else torch.float32
    reference = copy.deepcopy(model).to(dtype)
    x0, y0 = (torch.from_numpy(a) for a in data[0])
    traced = zcc.from_torch(model, (x0,), (y0,), loss=nanogpt.lm_loss)
    optimizer, scheduler = recipe(model)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        compiled = traced.compile(optimizer=optimizer, lr_schedule=scheduler,
                                  clip_grad_norm=clip)
    cosine = isinstance(scheduler, S.SequentialLR)
    assert any("rises again after T_max" in str(w.message)
               for w in warned) == cosine
    session = compiled.session(precision=precision)
    their_optimizer, their_scheduler = recipe(reference)
    ours, theirs, lrs = [], [], []
    for step in range(steps):
        x, y = data[step % len(data)]
        ours.append(session.step(x, y))
        their_optimizer.zero_grad()
        loss = nanogpt.lm_loss(reference(torch.from_numpy(x)),
                               torch.from_numpy(y))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(reference.parameters(), clip)
        lrs.append((float(session.read("lr")),
                    their_optimizer.param_groups[0]["lr"]))
        their_optimizer.step()
        their_scheduler.step()
        theirs.append(loss.item())
    return np.array(ours), np.array(theirs), np.array(lrs)


@pytest.mark.parametrize("recipe", [nanogpt_recipe, warmup_cosine_sgd],
                         ids=["nanogpt-adamw-lambdalr", "sgd-sequentiallr"])
@pytest.mark.parametrize("precision,tolerance", [("f64", 1e-9), ("f32", 1e-4)])
def test_the_scripts_optimizer_trains_as_pytorch(recipe, precision, tolerance):
    ours, theirs, lrs = train_both(recipe, precision)
    relative = np.abs(ours - theirs) / np.abs(theirs)
    assert relative.max() < tolerance, list(zip(ours, theirs))
    assert theirs[-1] < theirs[0]
    np.testing.assert_allclose(lrs[:, 0], lrs[:, 1],
                               rtol=1e-12 if precision == "f64" else 2e-7)
    assert len(set(np.round(lrs[:, 1], 12))) > 5  # the rate did change


def test_what_was_read():
    model, data = small_gpt()
    x0, y0 = (torch.from_numpy(a) for a in data[0])
    traced = zcc.from_torch(model, (x0,), (y0,), loss=nanogpt.lm_loss)
    optimizer, scheduler = nanogpt_recipe(model)
    zopt, zschedule = traced._from_torch(optimizer, scheduler)
    assert zopt.values["lr"] == 3e-3 and zopt.values["beta2"] == 0.95
    assert zopt.values["weight_decay"] == 0.1
    # The no-decay group: every parameter of fewer than 2 dimensions.
    small = sorted(n for n, p in model.named_parameters() if p.dim() < 2)
    assert zopt.values["no_weight_decay"] == small
    assert zschedule.values == {"lr_warmup_steps": 4, "lr_decay": "cosine",
                                "lr_decay_steps": 16,
                                "min_lr": pytest.approx(3e-4, rel=1e-12)}


def test_a_warmup_alone_and_a_linear_decay_are_read():
    model, data = small_gpt()
    x0, y0 = (torch.from_numpy(a) for a in data[0])
    traced = zcc.from_torch(model, (x0,), (y0,), loss=nanogpt.lm_loss)
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.1)
    warmup = S.LambdaLR(opt, lambda k: min(1.0, (k + 1) / 6))
    _, schedule = traced._from_torch(opt, warmup)
    assert schedule.values == {"lr_warmup_steps": 5, "lr_decay": "none",
                               "lr_decay_steps": 0, "min_lr": 0.0}
    opt = torch.optim.SGD(params, lr=0.1)
    linear = S.LambdaLR(opt, lambda k: nanogpt.get_lr(
        k, 0.1, warmup_steps=2, decay="linear", decay_steps=30000,
        min_lr=0.01) / 0.1)
    _, schedule = traced._from_torch(opt, linear)
    assert schedule.values == {"lr_warmup_steps": 2, "lr_decay": "linear",
                               "lr_decay_steps": 30000,
                               "min_lr": pytest.approx(0.01, rel=1e-12)}


def test_what_zcc_cannot_express_is_named():
    model, data = small_gpt()
    x0, y0 = (torch.from_numpy(a) for a in data[0])
    traced = zcc.from_torch(model, (x0,), (y0,), loss=nanogpt.lm_loss)
    params = list(model.parameters())

    def fails(match, optimizer, scheduler=None):
        with pytest.raises(zcc.Error, match=match):
            traced.compile(optimizer=optimizer, lr_schedule=scheduler)

    fails("different learning rates", torch.optim.AdamW(
        [{"params": params[:2], "lr": 1e-3}, {"params": params[2:]}], lr=1e-2))
    fails("Adam with weight_decay adds the decay to the gradient",
          torch.optim.Adam(params, weight_decay=0.1))
    fails("torch.optim.RMSprop is not supported", torch.optim.RMSprop(params))
    fails("amsgrad=True", torch.optim.AdamW(params, amsgrad=True))
    fails(r"weight decays \[0.01, 0.1\]", torch.optim.AdamW(
        [{"params": params[:2], "weight_decay": 0.1},
         {"params": params[2:], "weight_decay": 0.01}]))
    fails("are in no group", torch.optim.AdamW(params[1:]))
    opt = torch.optim.AdamW(params, lr=1e-3)
    fails("OneCycleLR is not supported",
          opt, S.OneCycleLR(opt, max_lr=1e-2, total_steps=100))
    opt = torch.optim.AdamW(params, lr=1e-3)
    fails("LinearLR.*is not zcc's warmup",
          opt, S.LinearLR(opt, start_factor=0.1, total_iters=5))
    opt = torch.optim.AdamW(params, lr=1e-3)
    fails("neither a cosine|factor at step",
          opt, S.LambdaLR(opt, lambda k: 0.5 + 0.5 * 0.99 ** k))
    # A plain zcc.Traced has no torch parameters to read by.
    plain = zcc.trace(lambda x: zcc.ops.sum(x * zcc.param("w", (3,))),
                      x=zcc.input((3,)))
    with pytest.raises(zcc.Error, match="needs a step imported with zcc.from_torch"):
        plain.compile(optimizer=torch.optim.SGD([torch.zeros(3)], lr=0.1))
