#!/usr/bin/env bash
# Configures and builds zcc into build/ (or $ZCC_BUILD_DIR). Extra arguments go
# to cmake, e.g. scripts/build.sh -DZCC_ENABLE_CUDA=OFF.
# With ccache installed (scripts/install-deps.sh installs it; ZCC_CCACHE=0
# goes without) every compile goes through it, cached in .cache/ccache with
# paths under the source tree made relative: a second build folder (the
# test command's MLIR-free one) reuses the first's objects wherever the
# compile is the same.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ZCC_BUILD_DIR:-$root/build}

launcher=()
if command -v ccache > /dev/null && [ "${ZCC_CCACHE:-1}" != 0 ]; then
  export CCACHE_DIR=${CCACHE_DIR:-$root/.cache/ccache}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
cmake --build "$build"
