#!/usr/bin/env bash
# run.sh's steps in less device time, for a short lease:
#   bench/gpu/run_parallel.sh DIR [OUT_DIR]
# Builds once, runs the checks (conformance, traces, the sanitizers, kill and
# resume, the soak) as three concurrent groups, then the benchmarks alone on
# the GPU (timings are never taken beside other work), then the profile.
# OUT_DIR gets one folder of logs per group and summary.md, every group's
# table; the exit status is non-zero when any step failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: run_parallel.sh DIR [OUT_DIR]}
out=${2:-$here/out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
failed=0

# group NAME REGEX: run.sh's steps whose names match REGEX, logs in OUT/NAME.
group() {
  ZCC_GPU_ONLY=$2 bash "$here/run.sh" "$dir" "$out/$1" > "$out/$1.log" 2>&1
}

start=$SECONDS
group build '^CUDA smoke test' || failed=1
tail -n 3 "$out/build.log"
[ -x "${ZCC_GPU_BUILD_DIR:-$here/../../build-gpu}/bin/zrun" ] || exit 1
export ZCC_GPU_SKIP_BUILD=1
group checks '^conformance|^traces: (mlp|gpt)' & a=$!
group sanitizers '^compute-sanitizer' & b=$!
group runs '^traces: (cnn|llama)|^eval entry|^data parallel, world|^zrun |^kill|^soak|^updates reading' & c=$!
for pid in $a $b $c; do wait $pid || failed=1; done
echo "checks done at $((SECONDS - start)) s"
group bench '^benchmark|^PyTorch' || failed=1
echo "benchmarks done at $((SECONDS - start)) s"
group profile '^profile' || failed=1

{
  echo "| step | result | seconds | log |"
  echo "|---|---|---|---|"
  for g in build checks sanitizers runs bench profile; do
    [ -f "$out/$g/summary.md" ] && grep '^| ' "$out/$g/summary.md" | grep -v '^| step | result' |
      sed "s#| \([^|]*\) |\$#| $g/\1 |#"
  done
  echo
  echo "total $((SECONDS - start)) s"
} | tee "$out/summary.md"
[ "$failed" = 0 ]
