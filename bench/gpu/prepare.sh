#!/usr/bin/env bash
# Prepares, on the development machine, everything the GPU suite needs on a
# GPU machine that has nvcc, CMake and PyTorch but no packages or network:
#   bench/gpu/prepare.sh DIR [BUILD_DIR]
# DIR/plans: the compiled plans (make_plans.sh, BUILD_DIR's zcc);
# DIR/deps: flatc and the runtime's libraries (pack_deps.sh).
# Copy the repository with DIR to the GPU machine, then there:
#   bench/gpu/run.sh DIR [OUT_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: prepare.sh DIR [BUILD_DIR]}
bash "$here/make_plans.sh" "$dir/plans" ${2:+"$2"}
bash "$here/pack_deps.sh" "$dir/deps"
echo "prepared $dir: now bench/gpu/run.sh $dir on the GPU machine"
