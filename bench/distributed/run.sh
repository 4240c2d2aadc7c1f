#!/usr/bin/env bash
# Data-parallel training on the CPU: zcc over MPI against PyTorch DDP (gloo),
# the same model, one global batch, in one run, alternating:
#   bench/distributed/run.sh [--rounds R] [--steps N] [--batch B]
# A 4-layer GPT (width 256, sequence 128, vocabulary 512) at a global batch
# of B rows (default 8): one process with 2 threads at batch B, against two
# ranks of one thread each at batch B/2 (zcc: plain data parallel with its
# default buckets and with DDP's 25 MiB, and ZeRO-1; PyTorch:
# DistributedDataParallel), and both with the gradients clipped by their
# global norm (zcc --clip-grad-norm 1; DDP then clip_grad_norm_(1)). Prints median ms per step, the ratios and zcc's
# bytes per rank, and writes bench/distributed/results.md. Builds zcc if needed
# and installs PyTorch into .cache/bench-venv (once), as bench/cpu/run.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=3 steps=20 batch=8
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    *) echo "usage: bench/distributed/run.sh [--rounds R] [--steps N] [--batch B]" >&2; exit 2 ;;
  esac
done
if ((batch % 2)); then echo "--batch must be even (two ranks)" >&2; exit 2; fi
# shellcheck source=../setup.sh
source "$root/bench/setup.sh" zcc zrun
# OpenBLAS picks its kernels for the CPU, as PyTorch's MKL does: an
# OPENBLAS_CORETYPE in the environment is removed (as bench/cpu/run.sh).
blasenv=""
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
  blasenv=" (the environment's OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE removed)"
  unset OPENBLAS_CORETYPE
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
gpt=4,256,4,128,512
half=$((batch / 2))
for b in "$batch" "$half"; do
  python3 "$root/bench/gpu/gpt_model.py" "$work/gpt_$b.mlir" --layers 4 --width 256 \
    --heads 4 --seq 128 --batch "$b" --vocab 512
done
z=("$build/bin/zcc" --optimizer adamw --lr 0.001)
"${z[@]}" "$work/gpt_$batch.mlir" -o "$work/one.zplan"
"${z[@]}" "$work/gpt_$half.mlir" -o "$work/dp.zplan" --data-parallel
"${z[@]}" "$work/gpt_$half.mlir" -o "$work/dp25.zplan" --data-parallel --bucket-bytes 25MiB
"${z[@]}" "$work/gpt_$half.mlir" -o "$work/zero.zplan" --data-parallel \
  --shard-optimizer-state --world-size 2
"${z[@]}" "$work/gpt_$half.mlir" -o "$work/dpclip.zplan" --data-parallel --clip-grad-norm 1
"${z[@]}" "$work/gpt_$half.mlir" -o "$work/zeroclip.zplan" --data-parallel \
  --shard-optimizer-state --world-size 2 --clip-grad-norm 1
# zrun's stats: ms per step over all steps (the first included; PyTorch
# leaves 3 warm-up steps out), the persistent region and the arena.
zms() { awk '/steps run/ {gsub(/[(,]/, ""); for (i = 1; i <= NF; ++i) if ($i == "ms") print $(i - 1)}'; }
zpersistent() { awk '/^  persistent region/ {print $3}'; }
zarena() { awk '/^  arena capacity/ {print $3}'; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A ms mem arena
# One zcc run's stats into the tables under KEY: zrun [ARGS...] alone, or
# under mpirun -np 2 with --mpi.
zrecord() {
  local key=$1 launch=()
  shift
  if [ "$1" = --mpi ]; then launch=(mpirun -np 2); shift; fi
  local out
  out=$("${launch[@]}" "$build/bin/zrun" "$@" --steps "$steps")
  ms[$key]+="$(echo "$out" | zms) "
  mem[$key]=$(echo "$out" | zpersistent)
  arena[$key]=$(echo "$out" | zarena)
}
for ((r = 0; r < rounds; ++r)); do
  zrecord zone "$work/one.zplan" --threads 2
  zrecord zdp --mpi "$work/dp.zplan" --threads 1
  zrecord zdp25 --mpi "$work/dp25.zplan" --threads 1
  zrecord zzero --mpi "$work/zero.zplan" --threads 1
  zrecord zdpclip --mpi "$work/dpclip.zplan" --threads 1
  zrecord zzeroclip --mpi "$work/zeroclip.zplan" --threads 1
  ms[tone]+="$("$venv/bin/python" "$root/bench/distributed/torch_ddp.py" --gpt $gpt \
    --batch "$batch" --steps "$steps" --threads 2 | awk '{print $2}') "
  ms[tddp]+="$("$venv/bin/torchrun" --standalone --nproc_per_node 2 \
    "$root/bench/distributed/torch_ddp.py" --gpt $gpt --batch "$half" --steps "$steps" \
    --threads 1 2> /dev/null | awk '/ms_per_step/ {print $2}') "
  ms[tddpclip]+="$("$venv/bin/torchrun" --standalone --nproc_per_node 2 \
    "$root/bench/distributed/torch_ddp.py" --gpt $gpt --batch "$half" --steps "$steps" \
    --threads 1 --clip-grad-norm 1 2> /dev/null | awk '/ms_per_step/ {print $2}') "
done
med() { printf '%s\n' ${ms[$1]} | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
{
  echo "Data-parallel training on the CPU: zcc over $(mpirun --version | head -1) against PyTorch $("$venv/bin/python" -c 'import torch; print(torch.__version__)') DDP (gloo); $(nproc) CPUs ($(uname -m))$blasenv; a 4-layer GPT (width 256, sequence 128, vocabulary 512), AdamW, a global batch of $batch rows; medians of $rounds rounds of $steps steps, alternating"
  echo
  echo "| configuration | zcc (ms/step) | PyTorch (ms/step) | zcc / PyTorch | zcc persistent bytes per rank | zcc arena bytes per rank |"
  echo "|---|---:|---:|---:|---:|---:|"
  echo "| 1 process, 2 threads, batch $batch | $(med zone) | $(med tone) | $(ratio "$(med zone)" "$(med tone)") | ${mem[zone]} | ${arena[zone]} |"
  echo "| 2 ranks, 1 thread each, batch $half each (zcc data parallel; DDP) | $(med zdp) | $(med tddp) | $(ratio "$(med zdp)" "$(med tddp)") | ${mem[zdp]} | ${arena[zdp]} |"
  echo "| the same, zcc with DDP's 25 MiB buckets (\`--bucket-bytes 25MiB\`) | $(med zdp25) | $(med tddp) | $(ratio "$(med zdp25)" "$(med tddp)") | ${mem[zdp25]} | ${arena[zdp25]} |"
  echo "| the same, zcc with ZeRO-1 | $(med zzero) | $(med tddp) | $(ratio "$(med zzero)" "$(med tddp)") | ${mem[zzero]} | ${arena[zzero]} |"
  echo "| 2 ranks, gradients clipped (zcc \`--clip-grad-norm 1\`; DDP, then \`clip_grad_norm_(1)\`) | $(med zdpclip) | $(med tddpclip) | $(ratio "$(med zdpclip)" "$(med tddpclip)") | ${mem[zdpclip]} | ${arena[zdpclip]} |"
  echo "| the same, zcc with ZeRO-1 | $(med zzeroclip) | $(med tddpclip) | $(ratio "$(med zzeroclip)" "$(med tddpclip)") | ${mem[zzeroclip]} | ${arena[zzeroclip]} |"
  echo
  echo "Two ranks against one process: zcc $(ratio "$(med zdp)" "$(med zone)")x the step time (ZeRO-1 $(ratio "$(med zzero)" "$(med zone)")x), PyTorch $(ratio "$(med tddp)" "$(med tone)")x."
  echo "Clipping: zcc $(ratio "$(med zdpclip)" "$(med zdp)")x its data-parallel step (ZeRO-1 $(ratio "$(med zzeroclip)" "$(med zzero)")x), PyTorch $(ratio "$(med tddpclip)" "$(med tddp)")x."
  echo
  echo "Command: \`bash bench/distributed/run.sh --rounds $rounds --steps $steps --batch $batch\`"
} | tee "$root/bench/distributed/results.md"
