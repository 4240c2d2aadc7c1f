#!/usr/bin/env bash
# Two builds of zcc's CPU executor on the same plans, alternating, in one run:
# a refactoring's before and after (the step time must stay within noise).
#   bench/cpu/ab.sh BEFORE_BUILD AFTER_BUILD [--rounds R] [--steps N] [--threads T]
# Both builds need bin/zcc-cpu-bench; the plans are compiled by AFTER's zcc
# (a plan both runtimes load). Prints a table of median ms/step and the ratio.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
before=${1:?usage: ab.sh BEFORE_BUILD AFTER_BUILD [--rounds R] [--steps N] [--threads T]}
after=${2:?usage: ab.sh BEFORE_BUILD AFTER_BUILD [--rounds R] [--steps N] [--threads T]}
shift 2
rounds=5 steps=20 threads=2
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "ab.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$after/bin/zcc" "$root/examples/mlp.mlir" -o "$work/mlp.zplan" --optimizer adamw --lr 0.001
"$after/bin/zcc" "$root/examples/gpt_block.mlir" -o "$work/gpt_block.zplan" --optimizer adamw --lr 0.001
python3 "$root/bench/gpu/gpt_model.py" "$work/gpt_mid.mlir" --layers 4 --width 256 \
  --heads 4 --seq 128 --batch 8 --vocab 512
"$after/bin/zcc" "$work/gpt_mid.mlir" -o "$work/gpt_mid.zplan" --optimizer adamw --lr 0.001
"$after/bin/zcc" "$work/gpt_mid.mlir" -o "$work/gpt_mid_bf16.zplan" --optimizer adamw \
  --lr 0.001 --precision bf16
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "zcc-cpu-bench, $threads threads, $(nproc) CPUs, $rounds rounds of $steps steps alternating, medians"
echo
echo "| plan | before (ms/step) | after (ms/step) | after / before |"
echo "|---|---:|---:|---:|"
for plan in mlp gpt_block gpt_mid gpt_mid_bf16; do
  bs=() as=()
  for ((r = 0; r < rounds; ++r)); do
    bs+=("$("$before/bin/zcc-cpu-bench" "$work/$plan.zplan" --steps "$steps" --threads "$threads" | awk '{print $2}')")
    as+=("$("$after/bin/zcc-cpu-bench" "$work/$plan.zplan" --steps "$steps" --threads "$threads" | awk '{print $2}')")
  done
  b=$(printf '%s\n' "${bs[@]}" | median)
  a=$(printf '%s\n' "${as[@]}" | median)
  echo "| $plan | $b | $a | $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", a / b}') |"
done
