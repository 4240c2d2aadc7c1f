#!/usr/bin/env bash
# bf16 attention on cuDNN against zcc's reference kernels, on a GPU, in
# about a minute (for a short lease; run.sh runs the whole suite):
#   bench/gpu/attention_check.sh BIN_DIR PLANS_DIR
# BIN_DIR holds zrun and zcc-cuda-conformance-tests (a build with CUDA),
# PLANS_DIR make_plans.sh's plans. It runs the CUDA conformance of every
# kernel and of the bf16 kernels (attention through the lowering hook: the
# log says where each case ran), gpt_block_bf16's traces in the four modes
# (cuDNN's backward must be deterministic), the 4x256 GPT's bf16 losses on
# CUDA (cuDNN, and ZCC_CUDNN=0) against the CPU executor's, and GPT-2 small
# in bf16 with cuDNN and with ZCC_CUDNN=0: the losses and ms per step.
# The exit status is non-zero when a check failed.
set -uo pipefail
bin=$(cd "${1:?usage: attention_check.sh BIN_DIR PLANS_DIR}" && pwd)
plans=$(cd "${2:?usage: attention_check.sh BIN_DIR PLANS_DIR}" && pwd)
tmp=$(mktemp -d)
failed=0
fail() { echo "FAILED: $*"; failed=1; }

echo "== conformance on CUDA: every kernel and the bf16 kernels"
"$bin/zcc-cuda-conformance-tests" \
  --gtest_filter='*EveryKernel*:*Bf16Kernels*:*Tf32*:*GptBlockGradients*' ||
  fail "conformance"

echo "== gpt_block_bf16: 30 steps in graph/eager/no-reuse/poison"
base=""
for run in graph:planned eager:planned graph:no-reuse graph:poison; do
  name=$tmp/trace-${run/:/-}.txt
  "$bin/zrun" "$plans/gpt_block_bf16.zplan" --device cuda --launch "${run%%:*}" \
    --mode "${run#*:}" --steps 30 --trace > "$name.log" 2>&1 || { fail "zrun $run"; continue; }
  grep '^step ' "$name.log" > "$name"
  [ -z "$base" ] && { base=$name; grep '^device:' "$name.log"; tail -n 1 "$name"; continue; }
  cmp -s "$base" "$name" && echo "$run: bit-identical to graph/planned" ||
    fail "$run differs from graph/planned"
done

# Against the CPU executor: the 4x256 GPT (sequence 128: two blocks of the
# reference kernels' query rows) in bf16, 20 steps, with cuDNN, with the
# reference kernels and on the CPU.
echo "== GPT 4x256 bf16, 20 steps: CUDA with cuDNN, CUDA's reference kernels, the CPU"
runs=("cuda 1" "cuda 0" "cpu 1")
for r in "${runs[@]}"; do
  set -- $r
  ZCC_CUDNN=$2 "$bin/zrun" "$plans/gpt_mid_bf16.zplan" --device "$1" --steps 20 \
    --print-every 1 > "$tmp/mid-$1-$2.txt" 2>&1 || { fail "zrun gpt_mid_bf16 $r"; tail -n 5 "$tmp/mid-$1-$2.txt"; }
  grep '^device:' "$tmp/mid-$1-$2.txt"
done
paste <(grep '^step ' "$tmp/mid-cuda-1.txt" | awk '{print $2, $4}') \
      <(grep '^step ' "$tmp/mid-cuda-0.txt" | awk '{print $4}') \
      <(grep '^step ' "$tmp/mid-cpu-1.txt" | awk '{print $4}') |
  awk '{ a = $2 - $4; if (a < 0) a = -a; b = $3 - $4; if (b < 0) b = -b;
         if (a > wa) wa = a; if (b > wb) wb = b;
         printf "step %s: cuDNN %s reference %s cpu %s\n", $1, $2, $3, $4 }
       END { printf "largest difference from the CPU: cuDNN %.6f, reference kernels %.6f\n", wa, wb;
             if (NR != 20 || wa > 0.02 || wb > 0.02) exit 1 }' ||
  fail "the GPT's bf16 losses on CUDA differ from the CPU's by more than 0.02"

echo "== GPT-2 small bf16, 20 steps: cuDNN attention against the reference kernels"
for cudnn in 1 0; do
  ZCC_CUDNN=$cudnn "$bin/zrun" "$plans/gpt2_small_bf16.zplan" --device cuda \
    --steps 20 --print-every 1 > "$tmp/gpt2-$cudnn.txt" 2>&1 || {
    fail "zrun gpt2_small_bf16 ZCC_CUDNN=$cudnn"; tail -n 5 "$tmp/gpt2-$cudnn.txt"; }
  echo "ZCC_CUDNN=$cudnn: $(grep '^device:' "$tmp/gpt2-$cudnn.txt")"
  grep 'steps run' "$tmp/gpt2-$cudnn.txt"
done
paste <(grep '^step ' "$tmp/gpt2-1.txt" | awk '{print $2, $4}') \
      <(grep '^step ' "$tmp/gpt2-0.txt" | awk '{print $4}') |
  awk '{ printf "step %s: cuDNN %s reference %s\n", $1, $2, $3 }'
rm -rf "$tmp"
echo "$failed"
exit "$failed"
