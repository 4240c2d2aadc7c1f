#!/usr/bin/env bash
# MiniMalloc's challenging instances: each solved at 1,048,576 bytes by auto
# and exact (10 s limit each), then minimised by auto for 30 s; writes
# bench/planner/challenging.md.
# usage: bench/planner/challenging.sh [DIR]
#   (default: ../shared/bench/planner/challenging)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
data=${1:-$root/../shared/bench/planner/challenging}
build=${ZCC_BUILD_DIR:-$root/build}
ZCC_BUILD_DIR=$build "$root/scripts/build.sh" >/dev/null
"$build/bin/zcc-planner-bench" --challenging "$data" --time-limit 10 \
  --minimize-limit 30 --out "$root/bench/planner/challenging.md"
