#!/usr/bin/env bash
# Where one kernel's time goes, for the kernels of an eager step named by
# their functor (ncu's Speed of Light, occupancy, launch and memory
# sections, one launch each):
#   bench/gpu/kernel_sections.sh ZRUN PLAN OUT_DIR FUNCTOR...
# e.g. ... build-gpu/bin/zrun plans/gpt2_small_bf16.zplan /tmp/k ElementProgram StridedCopy
# zcc's kernels are templates over their functor F (runKernel<F>,
# elementKernel<F>, groupKernel<F>, warpGroupKernel<F>), so the match is on
# the demangled name's template argument (...::F).
set -uo pipefail
zrun=${1:?usage: kernel_sections.sh ZRUN PLAN OUT_DIR FUNCTOR...}
plan=${2:?}
out=${3:?}
shift 3
mkdir -p "$out"
for k in "$@"; do
  timeout 60 ncu --clock-control none --kernel-name-base demangled --kernel-name "regex:::$k" \
    --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section MemoryWorkloadAnalysis \
    "$zrun" "$plan" --device cuda --launch eager --steps 1 > "$out/$k.txt" 2>&1
  echo "== $k"
  grep -E "zcc::|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Block Size|Grid Size|Local Memory" \
    "$out/$k.txt" | head -14
done
