"""Session.sync_to / sync_from: a run moves between zcc and PyTorch mid-way
(parameters, AdamW's moments and step, SGD's momentum) and goes on as a run
that never left PyTorch."""

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

STEPS, SWITCH = 10, 5


def small_gpt():
    torch.manual_seed(0)
    return (nanogpt.GPT(vocab=128, sequence=16, width=64, heads=4, layers=2),
            nanogpt.batches(4, batch=4, sequence=16, vocab=128))


def make_optimizer(model, sgd):
    groups = nanogpt.param_groups(model, 0.1 if not sgd else 1e-3, 2)
    if sgd:
        return torch.optim.SGD(groups, lr=0.3, momentum=0.9)
    return torch.optim.AdamW(groups, lr=3e-3, betas=(0.9, 0.95))


def torch_step(model, optimizer, batch):
    x, y = (torch.from_numpy(a) for a in batch)
    optimizer.zero_grad()
    loss = nanogpt.lm_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@pytest.mark.parametrize("sgd", [False, True], ids=["adamw", "sgd"])
def test_pytorch_continues_from_zcc_and_zcc_from_pytorch(sgd):
    model, data = small_gpt()
    batch = lambda k: data[k % len(data)]  # noqa: E731
    # The run that never leaves PyTorch (f64).
    never = copy.deepcopy(model).double()
    never_opt = make_optimizer(never, sgd)
    reference = [torch_step(never, never_opt, batch(k)) for k in range(STEPS)]

    x0, y0 = (torch.from_numpy(a) for a in data[0])
    imported = copy.deepcopy(model)
    traced = zcc.from_torch(imported, (x0,), (y0,), loss=nanogpt.lm_loss)
    compiled = traced.compile(optimizer=make_optimizer(imported, sgd))

    # zcc first, then PyTorch from zcc's state.
    session = compiled.session(precision="f64")
    first = [session.step(*batch(k)) for k in range(SWITCH)]
    target = copy.deepcopy(model).double()
    target_opt = make_optimizer(target, sgd)
    session.sync_to(target, target_opt)
    then = [torch_step(target, target_opt, batch(k)) for k in range(SWITCH, STEPS)]
    np.testing.assert_allclose(first + then, reference, rtol=1e-9)

    # PyTorch first, then zcc from PyTorch's state.
    source = copy.deepcopy(model).double()
    source_opt = make_optimizer(source, sgd)
    first = [torch_step(source, source_opt, batch(k)) for k in range(SWITCH)]
    fresh = compiled.session(precision="f64")
    fresh.sync_from(source, source_opt)
    if not sgd:  # AdamW's step, for its bias correction
        assert fresh.step_count == SWITCH
    then = [fresh.step(*batch(k)) for k in range(SWITCH, STEPS)]
    np.testing.assert_allclose(first + then, reference, rtol=1e-9)

    # Not vacuous: PyTorch continuing without zcc's optimizer state (fresh
    # moments) ends elsewhere.
    bare = copy.deepcopy(model).double()
    bare_opt = make_optimizer(bare, sgd)
    session.sync_to(bare)
    apart = [torch_step(bare, bare_opt, batch(k)) for k in range(SWITCH, STEPS)]
    assert np.max(np.abs(np.array(apart) - reference[SWITCH:])) > 1e-6


def test_steps_take_torch_tensors():
    # Feeds may be torch tensors (a DataLoader's): the CPU's are read in
    # place through DLPack, with requires_grad or not; the losses are the
    # NumPy feeds' bit for bit.
    model, data = small_gpt()
    x0, y0 = (torch.from_numpy(a) for a in data[0])
    compiled = zcc.from_torch(copy.deepcopy(model), (x0,), (y0,),
                              loss=nanogpt.lm_loss).compile()
    by_numpy, by_torch = compiled.session(), compiled.session()
    for k in range(3):
        x, y = data[k]
        a = by_numpy.step(x, y)
        b = by_torch.step(torch.from_numpy(x), torch.from_numpy(y))
        assert a == b
    floats = zcc.trace(lambda x: zcc.ops.sum(x * zcc.param("w", (3,))),
                       x=zcc.input((3,))).compile(optimizer=None).session()
    t = torch.ones(3, requires_grad=True)
    assert floats.step(t) == floats.step(np.ones(3, np.float32))
