#!/usr/bin/env bash
# Installs what zcc needs on Debian 12. Idempotent and quick when all is there:
# apt is only called for packages that are missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build lld git python3
  # Compiles cached (scripts/build.sh): the test command's second build
  # folder takes the first's objects.
  ccache
  # MLIR/LLVM 19: libmlir-19-dev needs mlir-tblgen from mlir-19-tools; FileCheck,
  # not and lit.py come from llvm-19-tools.
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
  libgtest-dev
  # The runtime: the plan file (flatbuffers), matrix products (OpenBLAS),
  # safetensors headers (nlohmann-json), .npz archives (libzip, zlib).
  libflatbuffers-dev flatbuffers-compiler libopenblas-dev nlohmann-json3-dev zlib1g-dev
  libzip-dev
  # Command lines of the tools (zrun).
  libcli11-dev
  # Data-parallel training on the CPU (mpirun -np N zrun; docs/distributed.md).
  libopenmpi-dev openmpi-bin
  # The zcc Python package: headers for its module, a venv for its build
  # and test dependencies (scripts/python-env.sh).
  python3-dev python3-venv
  # The memory page's test draws it in headless Chromium.
  chromium
  # libFuzzer harnesses of the readers (scripts/fuzz.sh): clang and its
  # runtime libraries (libFuzzer, ASan, UBSan).
  clang libclang-rt-dev
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} Debian packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
