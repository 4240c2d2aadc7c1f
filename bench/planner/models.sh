#!/usr/bin/env bash
# The planner on whole models: GPT-shaped steps (bench/gpu/gpt_model.py)
# compiled by zcc with its default planner limits (60 s, 2M nodes), plain and
# with ZeRO-1 on 2 and 4 ranks. The shapes are the ones that were hard: small
# vocabularies (per-layer buckets as large as the activations) and rows of
# 197 (a ViT's patches: sizes that are not multiples of the alignment).
# Prints, per step, zcc's wall time, the arena, the lower bound and their
# ratio, and writes bench/planner/models.md. With --before OLD_ZCC, another
# build of zcc (an earlier planner) runs each step first, side by side.
#   bench/planner/models.sh [--before OLD_ZCC]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${ZCC_BUILD_DIR:-$root/build}
zcc=$build/bin/zcc
before=""
if [ "${1:-}" = --before ]; then before=$2; fi
[ -x "$zcc" ] || ZCC_BUILD_DIR=$build bash "$root/scripts/build.sh" > /dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$root/bench/planner/models.md

# layers width heads sequence batch vocabulary
models=(
  "8 768 12 128 2 512"
  "12 768 12 128 1 512"
  "12 768 12 128 2 512"
  "12 768 12 256 1 512"
  "24 1024 16 128 1 512"
  "24 1024 16 128 2 512"
  "12 768 12 197 2 1000"
  "12 768 12 197 8 1000"
  "24 1024 16 197 2 1000"
)
modes=("plain|" "ZeRO-1, 2 ranks|--data-parallel --shard-optimizer-state --world-size 2"
  "ZeRO-1, 4 ranks|--data-parallel --shard-optimizer-state --world-size 4")

# One compile: "seconds arena bound" of the first entry.
compile() {
  local start seconds
  start=$(date +%s.%N)
  "$1" "$work/m.mlir" -o "$work/m.zplan" --optimizer adamw "${flags[@]}" \
    --report > "$work/report.txt"
  seconds=$(echo "$(date +%s.%N) - $start" | bc)
  echo "$seconds $(awk '/^  arena / {print $2; exit}' "$work/report.txt")" \
    "$(awk '/^  lower bound / {print $3; exit}' "$work/report.txt")"
}
ratio() { printf '%.4f' "$(echo "$1 / $2" | bc -l)"; }

{
  echo "Command: \`bash bench/planner/models.sh${before:+ --before OLD_ZCC}\`"
  echo "($(date -u +%Y-%m-%d), $(nproc) CPUs, zcc at"
  echo "$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown))."
  echo "Each: \`zcc MODEL.mlir --optimizer adamw [FLAGS] --report\`; the first"
  echo "entry's arena over its lower bound (workspace included in both; with"
  echo "--before, both arenas over this zcc's bound), and zcc's wall time."
  echo
  if [ -n "$before" ]; then
    echo "| layers, width, heads, sequence, batch, vocabulary | step | before: time (s) | before: arena / bound | now: time (s) | now: arena / bound | arena (bytes) | lower bound (bytes) |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|"
  else
    echo "| layers, width, heads, sequence, batch, vocabulary | step | zcc time (s) | arena / bound | arena (bytes) | lower bound (bytes) |"
    echo "|---|---|---:|---:|---:|---:|"
  fi
} > "$work/table.md"
for model in "${models[@]}"; do
  read -r layers width heads seq batch vocab <<< "$model"
  python3 "$root/bench/gpu/gpt_model.py" "$work/m.mlir" --layers "$layers" \
    --width "$width" --heads "$heads" --seq "$seq" --batch "$batch" \
    --vocab "$vocab" > /dev/null
  for mode in "${modes[@]}"; do
    name=${mode%%|*}
    read -r -a flags <<< "${mode#*|}"
    row="| ${model// /, } | $name |"
    if [ -n "$before" ]; then
      read -r oldSeconds oldArena _ <<< "$(compile "$before")"
    fi
    read -r seconds arena bound <<< "$(compile "$zcc")"
    # Both arenas over this zcc's bound (an earlier one may be weaker).
    if [ -n "$before" ]; then
      row+=" $(printf '%.2f' "$oldSeconds") | $(ratio "$oldArena" "$bound") |"
    fi
    row+=" $(printf '%.2f' "$seconds") | $(ratio "$arena" "$bound") | $arena | $bound |"
    echo "$row" | tee -a "$work/table.md"
  done
done
cp "$work/table.md" "$out"
echo "wrote $out"
