#!/usr/bin/env bash
# Compiles the plans the GPU suite and benchmarks need, on a machine with
# the compiler (this one needs no GPU):
#   bench/gpu/make_plans.sh OUT_DIR [BUILD_DIR]
# Then, on the GPU machine: bench/gpu/run.sh OUT_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: make_plans.sh OUT_DIR [BUILD_DIR]}
build=${2:-$root/build}
zcc=$build/bin/zcc
mkdir -p "$out"
ex=$root/examples
# The conformance suite's plans (the names ConformanceTest.cpp loads): the
# build's own, compiled by test/unit/CMakeLists.txt's list, so the two never
# differ (a plan missing here failed the GPU run's conformance at load).
cmake --build "$build" --target zcc-test-plans > /dev/null
cp "$build"/test/unit/plans/*.zplan "$out"/
# The benchmark's larger sizes: MLP batch 512, GPT batch 32.
python3 "$root/bench/gpu/scale_batch.py" "$ex/mlp.mlir" "$out/mlp_b512.mlir" 32 512
python3 "$root/bench/gpu/scale_batch.py" "$ex/gpt_block.mlir" "$out/gpt_block_b32.mlir" 2 32
"$zcc" "$out/mlp_b512.mlir" -o "$out/mlp_b512.zplan" --optimizer adamw --lr 0.001
"$zcc" "$out/gpt_block_b32.mlir" -o "$out/gpt_block_b32.zplan" --optimizer adamw --lr 0.001
# The same GPT at real sizes: issue 14's CPU benchmark model (4 layers,
# width 256, sequence 128, batch 8, vocabulary 512) and GPT-2 small (12
# layers, width 768, 12 heads, sequence 1024, batch 8, vocabulary 50304).
python3 "$root/bench/gpu/gpt_model.py" "$out/gpt_mid.mlir" --layers 4 --width 256 \
  --heads 4 --seq 128 --batch 8 --vocab 512
python3 "$root/bench/gpu/gpt_model.py" "$out/gpt2_small.mlir" --layers 12 --width 768 \
  --heads 12 --seq 1024 --batch 8 --vocab 50304
"$zcc" "$out/gpt_mid.mlir" -o "$out/gpt_mid.zplan" --optimizer adamw --lr 0.001
"$zcc" "$out/gpt2_small.mlir" -o "$out/gpt2_small.zplan" --optimizer adamw --lr 0.001
# f32 with TF32 products (issue 48: against PyTorch with allow_tf32).
"$zcc" "$out/gpt2_small.mlir" -o "$out/gpt2_small_tf32.zplan" --optimizer adamw --lr 0.001 \
  --matmul-precision tf32
# The 4x256 GPT data parallel (NCCL captured in the graph, against PyTorch
# DDP on NCCL), DDP's 25 MiB buckets.
"$zcc" "$out/gpt_mid.mlir" -o "$out/gpt_mid_dp.zplan" --optimizer adamw --lr 0.001 \
  --data-parallel
# Kill and resume (issue 49): the GPT example with dropout, AdamW, a warmup +
# cosine schedule, clipping and two microbatches per step.
"$zcc" "$ex/gpt_block.mlir" -o "$out/gpt_block_resume.zplan" --optimizer adamw \
  --lr 0.001 --lr-warmup-steps 5 --lr-decay cosine --lr-decay-steps 200 \
  --min-lr 0.0001 --clip-grad-norm 1.0 --accumulate --grad-scale 0.5
# bf16 mixed precision (issue 18): the GPT example, 4x256 and GPT-2 small.
"$zcc" "$ex/gpt_block.mlir" -o "$out/gpt_block_bf16.zplan" --optimizer adamw --lr 0.001 \
  --precision bf16
"$zcc" "$out/gpt_mid.mlir" -o "$out/gpt_mid_bf16.zplan" --optimizer adamw --lr 0.001 \
  --precision bf16
# The GPT example's updates reading f32 conversions of its bf16 gradients
# (data parallelism reduces the f32 gradients, so it keeps them; at world
# size 1 its mean is the identity): the same bits as gpt_block_bf16, whose
# updates read the bf16 ones.
"$zcc" "$ex/gpt_block.mlir" -o "$out/gpt_block_bf16_converted.zplan" --optimizer adamw \
  --lr 0.001 --precision bf16 --data-parallel
"$zcc" "$out/gpt2_small.mlir" -o "$out/gpt2_small_bf16.zplan" --optimizer adamw \
  --lr 0.001 --precision bf16
# Attention's heads copied out of the fused projection and back (issue 48:
# the views' time against the copies', same run).
"$zcc" "$out/gpt2_small.mlir" -o "$out/gpt2_small_bf16_copies.zplan" --optimizer adamw \
  --lr 0.001 --precision bf16 --attention-views=false
"$zcc" "$out/gpt2_small.mlir" -o "$out/gpt2_small_copies.zplan" --optimizer adamw \
  --lr 0.001 --attention-views=false
# The loss and the logits' gradient as two kernels (issue 48: the fused
# classifier's time against theirs, same run).
"$zcc" "$out/gpt2_small.mlir" -o "$out/gpt2_small_bf16_two_loss_kernels.zplan" \
  --optimizer adamw --lr 0.001 --precision bf16 --fuse-classifier=false
# GPT-2 small under memory budgets of 75% and 50% of its arena (issue 18:
# recomputation's extra step time on the GPU).
"$zcc" "$out/gpt2_small.mlir" -o /dev/null --optimizer adamw --lr 0.001 \
  --memory-json "$out/gpt2_small.memory.json"
arena=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["arena_bytes"])' \
  "$out/gpt2_small.memory.json")
for pct in 75 50; do
  "$zcc" "$out/gpt2_small.mlir" -o "$out/gpt2_small_m$pct.zplan" --optimizer adamw \
    --lr 0.001 --memory-budget $((arena * pct / 100))
done
# Imported models with eval and predict entries (convolutions, pooling,
# BatchNorm state; grouped-query attention): where the zcc package and
# PyTorch are there (scripts/python-env.sh's venv), else run.sh skips them.
python=${ZCC_PYTHON:-$root/.cache/py-venv/bin/python}
[ -x "$python" ] || python=python3
PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH} "$python" \
  "$root/bench/gpu/model_plans.py" "$out"
# The Llama-style benchmark model (issue 48), xz-compressed: 20 MB of
# mostly constants each, 0.3 MB packed (run.sh unpacks them).
PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH} "$python" \
  "$root/bench/gpu/model_plans.py" "$out" --bench
for plan in "$out"/llama_small*.zplan; do
  [ -f "$plan" ] && xz -T0 -f "$plan"
done
ls -l "$out"/*.zplan
