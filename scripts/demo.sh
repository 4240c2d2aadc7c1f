#!/usr/bin/env bash
# The zcc demo on a fresh Debian 12 machine: installs dependencies, builds, and
# shows what exists today: the example models parse and verify, print back to
# themselves, malformed IR is rejected with a message naming the rule, and
# each example's whole training step (forward, backward, optimizer) is
# planned into one arena, checked by an independent checker. The runtime
# extends this script when it lands.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ZCC_BUILD_DIR:-$root/build}

"$root/scripts/install-deps.sh" >/dev/null
ZCC_BUILD_DIR=$build "$root/scripts/build.sh" >/dev/null
zt_opt=$build/bin/zt-opt

for example in mlp gpt_block; do
  file=$root/examples/$example.mlir
  echo "== examples/$example.mlir: parse + verify, op counts"
  "$zt_opt" "$file" --print-op-stats -o /dev/null 2>&1 | sed 's/^/  /'
  echo "== examples/$example.mlir: training-step arguments (zt-print-arg-roles)"
  "$zt_opt" "$file" -zt-print-arg-roles -o /dev/null | grep -E 'total|@' | sed 's/^/  /'
  printed=$("$zt_opt" "$file")
  if [ "$printed" = "$("$zt_opt" <<<"$printed")" ]; then
    echo "  printed form is a fixed point (print -> parse -> print is byte-identical)"
  else
    echo "  error: printed form is not a fixed point" >&2
    exit 1
  fi
done

echo "== a malformed program is rejected with the rule it breaks"
bad=$(mktemp --suffix=.mlir)
cat >"$bad" <<'MLIR'
func.func @bad(%x: tensor<32x784xf32>, %w: tensor<128x784xf32>) -> tensor<32x128xf32> {
  %y = zt.matmul %x, %w : (tensor<32x784xf32>, tensor<128x784xf32>) -> tensor<32x128xf32>
  return %y : tensor<32x128xf32>
}
MLIR
status=0
"$zt_opt" "$bad" -o /dev/null >"$bad.log" 2>&1 || status=$?
sed 's/^/  /' "$bad.log"
if [ "$status" = 0 ]; then
  echo "error: malformed IR accepted" >&2
  exit 1
fi
echo "  (zt-opt exit status: $status)"
rm -f "$bad" "$bad.log"
for example in mlp gpt_block; do
  file=$root/examples/$example.mlir
  echo "== examples/$example.mlir: whole training step planned (zt-opt -zcc-train-step, AdamW)"
  plan=$("$zt_opt" "$file" -zcc-train-step="optimizer=adamw lr=0.001")
  echo "  $(grep -c 'zplan.launch' <<<"$plan") kernel launches, $(grep -c 'zplan.slot arena' <<<"$plan") arena buffers"
  grep -o 'zplan.arena_size = [0-9]*\|zplan.persistent_size = [0-9]*' <<<"$plan" | sed 's/^zplan./  /; s/ = / bytes: /'
  echo "  independent check of every offset:"
  python3 "$root/test/tools/check_zplan.py" - <<<"$plan" | sed 's/^/    /'
done
echo "== done: dialect, autodiff, optimizer, liveness and memory plan work end to end; the runtime comes next (docs/status.md)"
