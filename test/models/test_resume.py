"""Public models killed and resumed (issue 49): a GPT-2 from transformers
with its dropouts on and a torchvision ResNet-18 (BatchNorm's running
statistics are state the step writes), imported with zcc.from_torch and
compiled with AdamW, a warmup + cosine schedule and two accumulated
microbatches per step, trained by zrun, SIGKILLed at random moments (some
during a checkpoint's write), SIGTERMed, and resumed each time: every
step's loss bits and state hash and the final state are the uninterrupted
run's (test/tools/zrun/kill_resume.py)."""
import os
import subprocess
import sys

import pytest
import torch

import zcc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import zoo  # noqa: E402

DRIVER = os.path.join(HERE, "..", "tools", "zrun", "kill_resume.py")


def gpt2_with_dropout():
    import transformers
    config = transformers.GPT2Config(
        vocab_size=zoo.VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=4,
        attn_pdrop=0.1, resid_pdrop=0.1, embd_pdrop=0.1, use_cache=False,
        bos_token_id=0, eos_token_id=0, attn_implementation="sdpa")
    torch.manual_seed(0)
    return zoo._text(transformers.GPT2LMHeadModel(config))


# (model, steps, kills, SIGTERMs)
CASES = {"gpt2-dropout": (gpt2_with_dropout, 200, 50, 3),
         "resnet18": (zoo.resnet18, 16, 12, 1)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_killed_run_resumes_bit_identically(name, tmp_path):
    make, steps, kills, terms = CASES[name]
    module, inputs, labels, loss = make()
    module.train()
    compiled = zcc.from_torch(module, inputs, labels, loss=loss).compile(
        optimizer=zcc.adamw(lr=1e-3),
        lr_schedule=zcc.lr_schedule(warmup_steps=3, decay="cosine",
                                    decay_steps=steps),
        accumulate=True)
    plan = str(tmp_path / "model.zplan")
    weights = str(tmp_path / "weights.safetensors")
    compiled.save(plan)
    compiled.session().save(weights)  # the module's weights, for zrun
    bin_dir = os.environ.get("ZCC_BIN_DIR")
    assert bin_dir, "ZCC_BIN_DIR must name the build's bin/ (ctest sets it)"
    run = subprocess.run(
        [sys.executable, DRIVER, os.path.join(bin_dir, "zrun"), plan,
         "--kills", str(kills), "--sigterm", str(terms), "--", "--steps",
         str(steps), "--microbatches", "2", "--threads", "1",
         "--load-checkpoint", weights],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(run.stdout)
    assert run.returncode == 0, run.stdout
    assert (f"{steps} step lines compared, 0 differ, 0 never printed; "
            "final state bit-identical") in run.stdout
