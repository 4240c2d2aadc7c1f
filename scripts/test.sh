#!/usr/bin/env bash
# Runs every test of zcc on a fresh Debian 12 machine: installs dependencies
# (Debian packages; python/requirements-test.txt into .cache/py-venv), builds
# with the Python package, checks the build is incremental and that the
# MLIR-free configuration builds, then runs ctest (lit, GoogleTest, pytest)
# and 30 s of each libFuzzer harness (scripts/fuzz.sh). Ends with the
# fuzzers' table.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ZCC_BUILD_DIR:-$root/build}
# Each phase's heading says how far into the run it starts (CI's budget).
phase() { echo "== $* (at ${SECONDS} s)"; }

"$root/scripts/install-deps.sh"

phase "Python environment for the zcc package (scripts/python-env.sh)"
python=$("$root/scripts/python-env.sh")
# cudnn-frontend's headers, for the CUDA executor's cuDNN attention (the
# build goes on without them, running attention on its own kernels).
"$root/scripts/cudnn-frontend.sh" "$python" ||
  echo "warning: no cudnn-frontend headers: CUDA attention stays on the reference kernels" >&2

phase "build (compiler + runtime + Python package) in $build"
ZCC_BUILD_DIR=$build "$root/scripts/build.sh" -DZCC_BUILD_PYTHON=ON \
  -DPython_EXECUTABLE="$python"

phase "a second ninja run must have nothing to do"
noop=$(ninja -C "$build" -n)
if ! grep -q "no work to do" <<<"$noop"; then
  echo "error: a no-op rebuild would run:" >&2
  echo "$noop" >&2
  exit 1
fi
echo "ok: $(tail -n 1 <<<"$noop")"

phase "build with -DZCC_BUILD_COMPILER=OFF (runtime and planner alone, no MLIR)"
# Position-independent as the main build (the Python module needs it), so
# its compiles are the main build's and ccache gives their objects back.
ZCC_BUILD_DIR=$build-runtime-only "$root/scripts/build.sh" -DZCC_BUILD_COMPILER=OFF \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON

phase "tests"
# install-deps.sh installed Chromium: the memory page's test must not skip.
export ZCC_REQUIRE_CHROMIUM=1
cd "$build"
# One test per core: the suite takes about half the time of a serial run
# on two (the tests never time themselves; each uses its own files).
ctest --output-on-failure -j "$(nproc)" "$@"

phase "fuzz the readers of untrusted input, 30 s each (scripts/fuzz.sh)"
# Built at -O0: half the build time; the table says the speed reached.
ZCC_FUZZ_OPT=-O0 ZCC_FUZZ_BUILD_DIR=$build-fuzz "$root/scripts/fuzz.sh" 30
echo "test.sh: every phase passed in ${SECONDS} s"
