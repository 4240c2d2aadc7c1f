#!/usr/bin/env bash
# Fuzzes the readers of untrusted input with libFuzzer (test/fuzz): the
# .zplan loader, the safetensors reader, the .npz/.npy readers and the C
# API's compile on text, each for SECONDS (default 60; as many at once as
# there are cores) from its seed corpus
# (test/fuzz/corpus/NAME, kept in the repository; what a run adds stays in
# the build folder). Builds zcc with clang, coverage and ASan/UBSan in
# $ZCC_FUZZ_BUILD_DIR (default build-fuzz). Prints a table of executions
# per second and exits 1 when a harness crashed, leaked, timed out or ran
# out of memory: the input is kept as build-fuzz/findings/NAME/crash-*,
# for a test (docs/runtime.md, "Fuzzing"). ZCC_FUZZ_OPT (default -O1) is
# the optimization of a new build folder: the test command's -O0 builds in
# half the time, and the readers run at about half the speed.
#   scripts/fuzz.sh [SECONDS] [NAME...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ZCC_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${1:-60}
shift || true
names=("$@")
if ((${#names[@]} == 0)); then
  names=(plan safetensors npz compile)
fi

if ! command -v clang++ > /dev/null; then
  echo "fuzz.sh: clang++ is missing (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DZCC_FUZZ=ON \
    -DZCC_BUILD_TESTS=OFF -DZCC_ENABLE_CUDA=OFF -DZCC_ENABLE_MPI=OFF \
    -DCMAKE_BUILD_TYPE=None -DCMAKE_C_FLAGS="${ZCC_FUZZ_OPT:--O1} -gline-tables-only" \
    -DCMAKE_CXX_FLAGS="${ZCC_FUZZ_OPT:--O1} -gline-tables-only" > "$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; exit 1; }
fi
targets=()
for name in "${names[@]}"; do targets+=("zcc-fuzz-$name"); done
echo "== build ${targets[*]} (clang, libFuzzer, ASan/UBSan) in $build"
ninja -C "$build" "${targets[@]}" > "$build/fuzz-build.log" 2>&1 ||
  { tail -n 40 "$build/fuzz-build.log"; exit 1; }

# The harnesses side by side, one per core (each is one process); each
# writes its exit status beside its log.
fuzz_one() {
  local name=$1 corpus="$build/corpus/$1" findings="$build/findings/$1"
  mkdir -p "$corpus" "$findings"
  local status=0
  # ASan's allocator limit catches a reader that sizes an allocation from
  # the input; -timeout a hang; detect_leaks a lost allocation.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 \
    "$build/bin/zcc-fuzz-$name" "$corpus" "$root/test/fuzz/corpus/$name" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -malloc_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$findings/" > "$build/fuzz-$name.log" 2>&1 || status=$?
  echo "$status" > "$build/fuzz-$name.status"
}
cores=$(nproc 2>/dev/null || echo 1)
for name in "${names[@]}"; do
  rm -f "$build/fuzz-$name.status"
  while (($(jobs -rp | wc -l) >= cores)); do wait -n || true; done
  echo "== fuzz $name for $seconds s"
  fuzz_one "$name" &
done
wait

failed=0
rows=()
for name in "${names[@]}"; do
  log="$build/fuzz-$name.log"
  status=$(cat "$build/fuzz-$name.status" 2>/dev/null || echo "?")
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  cov=$( (grep -o 'cov: [0-9]*' "$log" || true) | tail -n 1 | cut -d' ' -f2)
  if [ "$status" != 0 ]; then
    failed=1
    rows+=("| $name | FAILED (exit $status) | ${runs:-?} | ${speed:-?} | ${cov:-?} |")
    (grep -E "ERROR|SUMMARY|Test unit written" "$log" || true) | head -n 5 >&2
  else
    rows+=("| $name | ok | ${runs:-?} | ${speed:-?} | ${cov:-?} |")
  fi
done
echo
echo "| harness | result | executions | per second | coverage (edges) |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
if [ "$failed" != 0 ]; then
  echo "fuzz.sh: a harness failed; its input is in $build/findings (logs: $build/fuzz-*.log)" >&2
  exit 1
fi
