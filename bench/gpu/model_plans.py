"""Plans of imported models for the GPU suite (bench/gpu/make_plans.sh):
what the GPT example does not use, at tiny sizes, each with the eval and
predict entries zcc.from_torch adds (dropout off, BatchNorm on its running
statistics), and its weights as NAME.safetensors (zrun --load-checkpoint):

  cnn.zplan         a torchvision-style CNN: 2-D convolutions (plain, strided,
                    depthwise), BatchNorm in training (its running statistics
                    state the step writes), max and adaptive average pooling,
                    hardswish, dropout, a linear classifier;
  llama_tiny.zplan  transformers' LlamaForCausalLM: grouped-query attention
                    (4 query heads on 2 key/value heads), rotary embeddings,
                    RMSNorm, the SiLU gate.

    PYTHONPATH=build/python python3 bench/gpu/model_plans.py OUT_DIR

With --bench it writes the benchmark's Llama-style model instead
(llama_model.py: 12 layers of width 768, grouped-query attention, batch 8,
sequence 1024), in f32 and bf16, without weights (its time does not depend
on them; zcc-gpu-bench steps it on the initial state):

  llama_small.zplan, llama_small_bf16.zplan

Needs torch, transformers (for Llama) and the zcc package; a plan it cannot make is named with the reason and
skipped (exit 0), so the suite runs without it.
"""

import os
import sys


def cnn():
    import torch
    from torch import nn
    import torch.nn.functional as F

    torch.manual_seed(0)
    module = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32),
        nn.Hardswish(),
        nn.Conv2d(32, 32, 3, padding=1, groups=32), nn.BatchNorm2d(32), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(32, 10))
    images = torch.randn(8, 3, 32, 32)
    labels = torch.randint(0, 10, (8,))
    return module, (images,), (labels,), F.cross_entropy


def llama_tiny():
    import torch
    import torch.nn.functional as F
    import llama_model

    # 2 layers of width 64, 4 query heads on 2 key/value heads, MLP 128,
    # sequence 32, vocabulary 128.
    module = llama_model.build("2,64,4,2,128,32,128")
    ids = torch.randint(0, 128, (2, 32))
    labels = torch.randint(0, 128, (64,))
    return module, (ids,), (labels,), F.cross_entropy


MODELS = {"cnn": cnn, "llama_tiny": llama_tiny}


def bench_plans(out, zcc):
    """The Llama-style benchmark model's f32 and bf16 plans (llama_model.py),
    as torch_bench.py --model llama builds it for PyTorch."""
    import torch
    import torch.nn.functional as F
    import llama_model

    _, _, _, _, _, seq, vocab = llama_model.parse_sizes(llama_model.DEFAULT_SIZES)
    batch = llama_model.DEFAULT_BATCH
    module = llama_model.build(llama_model.DEFAULT_SIZES)
    module.train()
    ids = torch.randint(0, vocab, (batch, seq))
    labels = torch.randint(0, vocab, (batch * seq,))
    traced = zcc.from_torch(module, (ids,), (labels,), loss=F.cross_entropy)
    for suffix, precision in (("", None), ("_bf16", "bf16")):
        path = os.path.join(out, f"llama_small{suffix}.zplan")
        compiled = traced.compile(optimizer=zcc.adamw(lr=1e-3),
                                  precision=precision)
        compiled.save(path)
        print(f"model_plans: {path} ({os.path.getsize(path)} bytes)")


def main(argv):
    bench = "--bench" in argv[1:]
    argv = [a for a in argv if a != "--bench"]
    if len(argv) != 2:
        print("usage: model_plans.py OUT_DIR [--bench]", file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    try:
        import zcc
    except ImportError as exc:
        print(f"model_plans: skipped every model: zcc is not importable ({exc})")
        return 0
    if bench:
        try:
            bench_plans(out, zcc)
        except ImportError as exc:
            print(f"model_plans: skipped the Llama benchmark: {exc}")
        return 0
    for name, build in MODELS.items():
        try:
            module, inputs, labels, loss = build()
        except ImportError as exc:
            print(f"model_plans: skipped {name}: {exc}")
            continue
        module.train()
        traced = zcc.from_torch(module, inputs, labels, loss=loss)
        path = os.path.join(out, f"{name}.zplan")
        compiled = traced.compile(optimizer=zcc.adamw(lr=1e-3))
        compiled.save(path)
        # The module's weights: an imported plan's parameters come at load.
        weights = os.path.join(out, f"{name}.safetensors")
        compiled.session().save(weights)
        print(f"model_plans: {path} ({os.path.getsize(path)} bytes), {weights}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
