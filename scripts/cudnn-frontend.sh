#!/usr/bin/env bash
# Puts cudnn-frontend's C++ headers (header-only; NVIDIA's graph API over
# cuDNN) in .cache/cudnn-frontend/include, where CMake finds them for the
# CUDA executor's cuDNN attention. From the nvidia-cudnn-frontend wheel,
# without its Python part or dependencies. Idempotent:
#   scripts/cudnn-frontend.sh [PYTHON_WITH_PIP]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=1.32.0
dest=$root/.cache/cudnn-frontend
if [ -f "$dest/include/cudnn_frontend.h" ] && [ "$(cat "$dest/version" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
python=${1:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "cudnn-frontend: fetching the headers of nvidia-cudnn-frontend $version" >&2
"$python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  "nvidia-cudnn-frontend==$version" -d "$tmp" >&2
rm -rf "$dest"
mkdir -p "$dest"
"$python" - "$tmp" "$dest" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("include/"):
            z.extract(name, sys.argv[2])
PY
echo "$version" > "$dest/version"
echo "cudnn-frontend: $(find "$dest/include" -name '*.h' | wc -l) headers in $dest/include" >&2
