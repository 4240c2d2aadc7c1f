#!/usr/bin/env bash
# Makes the Python environment the zcc package is built and tested with:
# .cache/py-venv from Debian's python3 (whose headers python3-dev provides),
# with python/requirements-test.txt. Idempotent; prints the interpreter's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${ZCC_PYTHON_VENV:-$root/.cache/py-venv}
requirements=$root/python/requirements-test.txt
stamp=$venv/.requirements

if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv" >&2
fi
if ! cmp -s "$requirements" "$stamp"; then
  echo "python-env: installing $(grep -cv '^#' "$requirements") packages into $venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements" >&2
  cp "$requirements" "$stamp"
fi
echo "$venv/bin/python"
