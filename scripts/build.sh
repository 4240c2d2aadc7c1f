#!/usr/bin/env bash
# Configures and builds zcc into build/ (or $ZCC_BUILD_DIR). Extra arguments go
# to cmake, e.g. scripts/build.sh -DZCC_ENABLE_CUDA=OFF.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ZCC_BUILD_DIR:-$root/build}

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build"
