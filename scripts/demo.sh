#!/usr/bin/env bash
# The zcc demo on a fresh Debian 12 machine: installs dependencies, builds,
# compiles the MLP example ahead of time with zcc (forward, backward, AdamW
# update, one static memory plan) and trains it with zrun on a synthetic
# task. It checks what it shows: the loss must fall by more than half over
# 200 steps, and the runtime must report 0 allocations after load.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ZCC_BUILD_DIR:-$root/build}

"$root/scripts/install-deps.sh" >/dev/null
ZCC_BUILD_DIR=$build "$root/scripts/build.sh" >/dev/null
bin=$build/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== zcc examples/mlp.mlir -o mlp.zplan --optimizer adamw --lr 0.001 --report"
"$bin/zcc" "$root/examples/mlp.mlir" -o "$work/mlp.zplan" --optimizer adamw --lr 0.001 --report | sed 's/^/  /'
echo "  wrote mlp.zplan: $(stat -c %s "$work/mlp.zplan") bytes"

echo "== zrun mlp.zplan --steps 200 (CPU executor, planned arena)"
"$bin/zrun" "$work/mlp.zplan" --steps 200 --print-every 10 | tee "$work/run.log" | sed 's/^/  /'

# The summary line: "loss <first> -> <last> over N steps".
first=$(awk '$1 == "loss" && $3 == "->" {print $2}' "$work/run.log")
last=$(awk '$1 == "loss" && $3 == "->" {print $4}' "$work/run.log")
after=$(awk '/allocations after load/{print $4}' "$work/run.log")
python3 - "$first" "$last" "$after" <<'PY'
import sys
first, last, after = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
print(f"== check: loss {first:.4f} at step 1 -> {last:.4f} at step 200; allocations after load: {after}")
if not last < first / 2:
    sys.exit("error: the loss did not fall by more than half")
if after != 0:
    sys.exit("error: the runtime allocated after load")
print("  ok: the loss fell by more than half, and no allocation happened after load")
PY

echo "== the same plan in no-reuse and poison modes gives bit-identical training"
for mode in planned no-reuse poison; do
  "$bin/zrun" "$work/mlp.zplan" --steps 20 --trace --mode "$mode" | grep '^step' >"$work/$mode.trace"
done
if cmp -s "$work/planned.trace" "$work/no-reuse.trace" && cmp -s "$work/planned.trace" "$work/poison.trace"; then
  echo "  ok: 20 steps, losses and every parameter bit-identical in all three modes"
  tail -n 1 "$work/planned.trace" | sed 's/^/  last: /'
else
  echo "error: modes disagree" >&2
  diff "$work/planned.trace" "$work/no-reuse.trace" | head >&2
  exit 1
fi
echo "== done (docs/runtime.md: the tools, the plan format, the modes)"
