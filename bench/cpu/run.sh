#!/usr/bin/env bash
# zcc's CPU executor against PyTorch eager on the CPU, the same models and
# shapes, in one run, alternating, at one thread count:
#   bench/cpu/run.sh [--threads T] [--rounds R] [--steps N] [--keep-blas-env]
# Builds zcc (scripts/build.sh) if needed, compiles the plans, installs
# PyTorch into .cache/bench-venv (from the Python registry, once), then for
# each model alternates zcc-cpu-bench and torch_cpu.py R times and prints a
# table of median step times and their ratio. Writes bench/cpu/results.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
threads=2 rounds=3 steps=20 keepblas=0
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --keep-blas-env) keepblas=1; shift ;;
    *) echo "usage: bench/cpu/run.sh [--threads T] [--rounds R] [--steps N] [--keep-blas-env]" >&2; exit 2 ;;
  esac
done
# shellcheck source=../setup.sh
source "$root/bench/setup.sh" zcc zcc-cpu-bench
"$build/bin/zcc" "$root/examples/mlp.mlir" -o "$work/mlp.zplan" --optimizer adamw --lr 0.001
"$build/bin/zcc" "$root/examples/gpt_block.mlir" -o "$work/gpt_block.zplan" --optimizer adamw --lr 0.001
python3 "$root/bench/gpu/gpt_model.py" "$work/gpt_mid.mlir" --layers 4 --width 256 \
  --heads 4 --seq 128 --batch 8 --vocab 512
"$build/bin/zcc" "$work/gpt_mid.mlir" -o "$work/gpt_mid.zplan" --optimizer adamw --lr 0.001
# The same model under a memory budget of half its arena (zt-remat).
mid_arena=$("$build/bin/zcc" "$work/gpt_mid.mlir" --optimizer adamw --lr 0.001 --report |
  awk '/^  arena/ {print $2; exit}')
"$build/bin/zcc" "$work/gpt_mid.mlir" -o "$work/gpt_mid_half.zplan" --optimizer adamw --lr 0.001 \
  --memory-budget $((mid_arena / 2))
# With the gradients clipped by their global norm, against clip_grad_norm_.
"$build/bin/zcc" "$work/gpt_mid.mlir" -o "$work/gpt_mid_clip.zplan" --optimizer adamw --lr 0.001 \
  --clip-grad-norm 1
# With a learning-rate schedule (warmup, cosine decay), against LambdaLR.
"$build/bin/zcc" "$work/gpt_mid.mlir" -o "$work/gpt_mid_lrs.zplan" --optimizer adamw --lr 0.001 \
  --lr-warmup-steps 10 --lr-decay cosine --lr-decay-steps 1000 --min-lr 0.0001
# And in bf16 mixed precision (zt-mixed-precision), against PyTorch's autocast.
"$build/bin/zcc" "$work/gpt_mid.mlir" -o "$work/gpt_mid_bf16.zplan" --optimizer adamw --lr 0.001 \
  --precision bf16
# Without zt-fuse-elementwise (the same bits, one launch per op).
"$build/bin/zcc" "$work/gpt_mid.mlir" -o "$work/gpt_mid_unfused.zplan" --optimizer adamw --lr 0.001 \
  --fuse-elementwise=false
# With attention's heads copied (no views), and with neither views nor fusion.
"$build/bin/zcc" "$work/gpt_mid.mlir" -o "$work/gpt_mid_copies.zplan" --optimizer adamw --lr 0.001 \
  --attention-views=false
"$build/bin/zcc" "$work/gpt_mid.mlir" -o "$work/gpt_mid_plain.zplan" --optimizer adamw --lr 0.001 \
  --attention-views=false --fuse-elementwise=false

# model | plan | torch_cpu.py arguments
models=(
  "MLP example (batch 32)|mlp|--model mlp --batch 32"
  "GPT example (2 layers, width 64, batch 2, sequence 16)|gpt_block|--model gpt --batch 2"
  "GPT 4 layers, width 256, batch 8, sequence 128, vocabulary 512|gpt_mid|--model gpt --gpt 4,256,4,128,512 --batch 8"
  "the same, zcc with --memory-budget of half its arena|gpt_mid_half|--model gpt --gpt 4,256,4,128,512 --batch 8"
  "the same in bf16: zcc --precision bf16, PyTorch autocast bf16|gpt_mid_bf16|--model gpt --gpt 4,256,4,128,512 --batch 8 --autocast-bf16"
  "the same in f32, zcc --fuse-elementwise=false (each element op its own kernel)|gpt_mid_unfused|--model gpt --gpt 4,256,4,128,512 --batch 8"
  "the same in f32, zcc --attention-views=false (attention's heads copied)|gpt_mid_copies|--model gpt --gpt 4,256,4,128,512 --batch 8"
  "the same in f32, zcc --attention-views=false --fuse-elementwise=false|gpt_mid_plain|--model gpt --gpt 4,256,4,128,512 --batch 8"
  "the same in f32, gradients clipped: zcc --clip-grad-norm 1, PyTorch clip_grad_norm_(1)|gpt_mid_clip|--model gpt --gpt 4,256,4,128,512 --batch 8 --clip-grad-norm 1"
  "the same in f32, a learning-rate schedule (10 warmup steps, cosine to step 1000): zcc --lr-decay cosine ..., PyTorch LambdaLR|gpt_mid_lrs|--model gpt --gpt 4,256,4,128,512 --batch 8 --lr-schedule 10,1000,0.0001"
)
# zcc runs its products on its own kernel threads (BLAS single-threaded);
# PyTorch gets the same count. OpenBLAS picks its kernels for the CPU, as
# MKL does for PyTorch: an OPENBLAS_CORETYPE in the environment (this
# project's machines set Haswell, which has no AVX-512) is removed unless
# --keep-blas-env is given.
export OMP_NUM_THREADS=$threads
blasenv=""
if [ -n "${OPENBLAS_CORETYPE:-}" ] && [ "$keepblas" = 0 ]; then
  blasenv=" (the environment's OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE removed)"
  unset OPENBLAS_CORETYPE
fi
blas=$(OPENBLAS_VERBOSE=2 "$build/bin/zcc-cpu-bench" 2>&1 | sed -n 's/^Core: //p' || true)
declare -A zcc_ms torch_ms
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
{
  echo "zcc CPU executor against PyTorch $("$venv/bin/python" -c 'import torch; print(torch.__version__)') eager, $threads threads, $(nproc) CPUs ($(uname -m)), OpenBLAS ${blas:-?} kernels$blasenv, $rounds rounds of $steps steps alternating, medians"
  echo
  echo "| model | zcc (ms/step) | PyTorch eager (ms/step) | zcc / PyTorch |"
  echo "|---|---:|---:|---:|"
  for m in "${models[@]}"; do
    IFS='|' read -r name plan args <<< "$m"
    zs=() ts=()
    for ((r = 0; r < rounds; ++r)); do
      zs+=("$("$build/bin/zcc-cpu-bench" "$work/$plan.zplan" --steps "$steps" --threads "$threads" | awk '{print $2}')")
      # shellcheck disable=SC2086
      ts+=("$("$venv/bin/python" "$root/bench/cpu/torch_cpu.py" $args --steps "$steps" --threads "$threads" | awk '{print $2}')")
    done
    z=$(printf '%s\n' "${zs[@]}" | median)
    t=$(printf '%s\n' "${ts[@]}" | median)
    zcc_ms[$plan]=$z
    torch_ms[$plan]=$t
    echo "| $name | $z | $t | $(awk -v z="$z" -v t="$t" 'BEGIN {printf "%.2f", z / t}') |"
  done
  echo
  echo "Half the arena ($((mid_arena / 2)) of $mid_arena bytes) costs the 4-layer GPT" \
    "$(awk -v a="${zcc_ms[gpt_mid_half]}" -v b="${zcc_ms[gpt_mid]}" 'BEGIN {printf "%.2f", a / b}')x its step time."
  echo "Clipping takes the 4-layer GPT" \
    "$(awk -v a="${zcc_ms[gpt_mid_clip]}" -v b="${zcc_ms[gpt_mid]}" 'BEGIN {printf "%.2f", a / b}')x its step time" \
    "(PyTorch's clip_grad_norm_: $(awk -v a="${torch_ms[gpt_mid_clip]}" -v b="${torch_ms[gpt_mid]}" 'BEGIN {printf "%.2f", a / b}')x)."
  echo "The schedule takes the 4-layer GPT" \
    "$(awk -v a="${zcc_ms[gpt_mid_lrs]}" -v b="${zcc_ms[gpt_mid]}" 'BEGIN {printf "%.2f", a / b}')x its step time" \
    "(PyTorch's LambdaLR: $(awk -v a="${torch_ms[gpt_mid_lrs]}" -v b="${torch_ms[gpt_mid]}" 'BEGIN {printf "%.2f", a / b}')x)."
  echo "bf16 takes the 4-layer GPT" \
    "$(awk -v a="${zcc_ms[gpt_mid_bf16]}" -v b="${zcc_ms[gpt_mid]}" 'BEGIN {printf "%.2f", a / b}')x its f32 step time."
  echo "Element-wise fusion (the default) takes the 4-layer GPT" \
    "$(awk -v a="${zcc_ms[gpt_mid]}" -v b="${zcc_ms[gpt_mid_unfused]}" 'BEGIN {printf "%.2f", a / b}')x its unfused step time" \
    "(the same bits; below 1 is faster)."
  echo "Attention views (the default) take it" \
    "$(awk -v a="${zcc_ms[gpt_mid]}" -v b="${zcc_ms[gpt_mid_copies]}" 'BEGIN {printf "%.2f", a / b}')x its step time with the heads copied;" \
    "views and fusion together $(awk -v a="${zcc_ms[gpt_mid]}" -v b="${zcc_ms[gpt_mid_plain]}" 'BEGIN {printf "%.2f", a / b}')x its time with neither (the same bits)."
} | tee "$root/bench/cpu/results.md"
