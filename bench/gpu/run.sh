#!/usr/bin/env bash
# The GPU suite and the GPU benchmarks, on a machine with an NVIDIA GPU and
# plans compiled elsewhere (bench/gpu/make_plans.sh):
#   bench/gpu/run.sh PLANS_DIR [OUT_DIR]
# Builds the runtime alone (-DZCC_BUILD_COMPILER=OFF: no MLIR needed), runs
# the CUDA smoke test, the conformance suite against the CPU executor, zrun
# under compute-sanitizer (where installed), the graph/eager benchmark and
# the PyTorch comparison (where PyTorch is installed). Results go to OUT_DIR
# (default bench/gpu/out); the tables are what docs/gpu-benchmarks.md shows.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
plans=$(cd "${1:?usage: run.sh PLANS_DIR [OUT_DIR]}" && pwd)
out=${2:-$root/bench/gpu/out}
build=${ZCC_GPU_BUILD_DIR:-$root/build-gpu}
mkdir -p "$out"

for tool in cmake ninja flatc nvcc; do
  command -v "$tool" > /dev/null || [ "$tool" = nvcc -a -x /usr/local/cuda/bin/nvcc ] || {
    echo "run.sh: '$tool' is missing; on Debian/Ubuntu: apt-get install cmake ninja-build" \
         "flatbuffers-compiler libflatbuffers-dev libopenblas-dev nlohmann-json3-dev" \
         "zlib1g-dev libgtest-dev (and the CUDA toolkit for nvcc)" >&2
    exit 1
  }
done

echo "== build the runtime alone in $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DZCC_BUILD_COMPILER=OFF -DZCC_ENABLE_CUDA=ON \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" > /dev/null
ninja -C "$build" zcc-cuda-info zcc-cuda-conformance-tests zcc-conformance-tests zcc-gpu-bench zrun

echo "== CUDA smoke test"
"$build/bin/zcc-cuda-info" --smoke | tee "$out/device.txt"

echo "== conformance: CUDA (graph and eager) and the emulator against the CPU"
ZCC_PLANS_DIR=$plans "$build/bin/zcc-cuda-conformance-tests" 2>&1 | tee "$out/conformance-cuda.txt"
ZCC_PLANS_DIR=$plans "$build/bin/zcc-conformance-tests" 2>&1 | tail -n 3 | tee "$out/conformance-emulator.txt"

echo "== zrun on the GPU: graph and eager, 200 steps each, trace compared"
for launch in graph eager; do
  "$build/bin/zrun" "$plans/gpt_block.zplan" --device cuda --launch $launch --steps 200 \
    --print-every 50 | tee "$out/zrun-$launch.txt"
done

if command -v compute-sanitizer > /dev/null; then
  echo "== compute-sanitizer (memcheck, racecheck) on 5 steps"
  compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$build/bin/zrun" "$plans/gpt_block.zplan" --device cuda --steps 5 | tee "$out/memcheck.txt"
  compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$build/bin/zrun" "$plans/mlp.zplan" --device cuda --launch eager --steps 2 | tee "$out/racecheck.txt"
else
  echo "compute-sanitizer not found: skipped" | tee "$out/memcheck.txt"
fi

echo "== benchmark: graph replay against eager launch, 1000 steps"
"$build/bin/zcc-gpu-bench" "$plans/mlp.zplan" "$plans/mlp_b512.zplan" \
  "$plans/gpt_block.zplan" "$plans/gpt_block_b32.zplan" --steps 1000 | tee "$out/zcc.md"

echo "== PyTorch eager and torch.cuda.graph, the same models"
python3 "$root/bench/gpu/torch_bench.py" --steps 1000 | tee "$out/torch.md"
echo "results in $out"
