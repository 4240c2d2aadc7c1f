#!/usr/bin/env bash
# What each CUDA kernel costs in registers, local memory (stack frame and
# spills) and shared memory, as ptxas reports it: a check that needs no GPU
# (a kernel whose values live in local memory shows a stack frame).
#   bench/gpu/kernel_resources.sh [BUILD_DIR]
# Recompiles the kernels' files (lib/Runtime/Executors/CUDA/CudaKernels*.cu)
# with BUILD_DIR's own nvcc commands plus --resource-usage, into a
# temporary folder (about a minute and a half, the files side by side),
# and prints a Markdown table, kernels with a stack frame first.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
objects=$(cd "$build" && ninja -t targets all | grep -o '^[^:]*CudaKernels[0-9]*\.cu\.o') ||
  { echo "kernel_resources: $build builds no CUDA backend (ZCC_ENABLE_CUDA)"; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
n=0
for object in $objects; do
  command=$(cd "$build" && ninja -t commands "$object" | tail -1)
  # The same command, without its dependency file, into the scratch folder.
  command=$(sed -E "s# -MD -MT [^ ]+ -MF [^ ]+##; s# -o [^ ]+# -o $scratch/kernels$n.o#" <<< "$command")
  (cd "$build" && eval "$command --resource-usage") > "$scratch/ptxas$n.txt" 2>&1 &
  n=$((n + 1))
done
for job in $(jobs -p); do
  wait "$job" || { cat "$scratch"/ptxas*.txt; exit 1; }
done
cat "$scratch"/ptxas*.txt > "$scratch/ptxas.txt"
python3 - "$scratch/ptxas.txt" <<'PY'
import re, subprocess, sys
text = open(sys.argv[1]).read()
rows = []
for block in text.split("Compiling entry function '")[1:]:
    name = block.split("'", 1)[0]
    stack = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", block)
    regs = re.search(r"Used (\d+) registers", block)
    smem = re.search(r"(\d+) bytes smem", block)
    rows.append([name, int(regs.group(1)) if regs else 0,
                 int(stack.group(1)) if stack else 0,
                 int(stack.group(2)) + int(stack.group(3)) if stack else 0,
                 int(smem.group(1)) if smem else 0])
names = subprocess.run(["c++filt"], input="\n".join(r[0] for r in rows),
                       capture_output=True, text=True).stdout.split("\n")
print("| kernel | registers | stack frame (bytes) | spills (bytes) | shared (bytes) |")
print("|---|---:|---:|---:|---:|")
for row, name in sorted(zip(rows, names), key=lambda p: (-p[0][2], -p[0][1])):
    short = re.sub(r"zcc::runtime::device::cuda::|zcc::runtime::device::|zcc::runtime::|\(anonymous namespace\)::|void ", "", name)
    short = re.sub(r"\(.*\)$", "", short).replace("|", "\\|")
    print(f"| `{short}` | {row[1]} | {row[2]} | {row[3]} | {row[4]} |")
PY
