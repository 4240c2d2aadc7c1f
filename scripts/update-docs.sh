#!/usr/bin/env bash
# Refreshes docs/generated/ from the ODS definitions and the compile
# options' rows (the docs-in-sync tests fail until this is run after a .td
# or OptionList.h change). Builds first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ZCC_BUILD_DIR:-$root/build}
ZCC_BUILD_DIR=$build "$root/scripts/build.sh" >/dev/null
cp "$build/docs/ZT/ZT.md" "$root/docs/generated/ZT.md"
cp "$build/docs/ZCCPasses.md" "$root/docs/generated/Passes.md"
cp "$build/docs/ZPlan/ZPlan.md" "$root/docs/generated/ZPlan.md"
cp "$build/docs/CompileOptions.md" "$root/docs/generated/CompileOptions.md"
echo "updated docs/generated/ZT.md, ZPlan.md, Passes.md and CompileOptions.md"
