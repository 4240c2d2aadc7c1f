#!/usr/bin/env bash
# The zcc demo on a fresh Debian 12 machine: installs dependencies, builds, and
# shows what exists today. The pipeline so far is the zt dialect: the example
# models parse and verify, print back to themselves, and malformed IR is
# rejected with a message naming the rule. Later stages (autodiff, planning,
# runtime) extend this script as they land.
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
echo "== done: the zt dialect works end to end; autodiff, planning and the runtime come next (docs/status.md)"
