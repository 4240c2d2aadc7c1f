#!/usr/bin/env bash
# Runs every planner algorithm on the real lifetime sets and on generated
# known-optimum instances (10 s search limit per run), then a sweep of 20
# known-optimum instances per size (5 s each); writes
# bench/planner/results.md.
# usage: bench/planner/run.sh [DATA_DIR]   (default: ../shared/bench/planner)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
data=${1:-$root/../shared/bench/planner}
build=${ZCC_BUILD_DIR:-$root/build}
ZCC_BUILD_DIR=$build "$root/scripts/build.sh" >/dev/null
"$build/bin/zcc-planner-bench" --data "$data" --time-limit 10 --sweep-limit 5 \
  --out "$root/bench/planner/results.md"
