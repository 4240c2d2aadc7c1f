# Sourced by the CPU benchmarks (bench/cpu/run.sh, bench/distributed/run.sh)
# with `root` set: builds zcc when one of the tools named as arguments is
# missing, installs PyTorch into .cache/bench-venv once, and sets `build`,
# `venv` and a `work` directory removed on exit.
build=${ZCC_BUILD_DIR:-$root/build}
for tool in "$@"; do
  if [ ! -x "$build/bin/$tool" ]; then
    ZCC_BUILD_DIR=$build bash "$root/scripts/build.sh"
    break
  fi
done
venv=$root/.cache/bench-venv
if ! "$venv/bin/python" -c "import torch" 2> /dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q torch numpy
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
