"""Predicting and verifying what an engine allocates (``harness predict``, ``harness
verify-allocation``): which engine's arithmetic or log, and the KV cache's settings."""

from __future__ import annotations

from harness.engines.logs import ENGINES
from harness.options import Option

ARITHMETIC_ENGINE = Option(
    "engine", default="llama-server", choices=("llama-server", "vllm"), help="whose allocation arithmetic"
)
LOG_ENGINE = Option(
    "engine", default="auto", choices=("auto", *ENGINES), help="whose load log it is (auto: recognised)"
)
SWA_FULL = Option("swa-full", bool, False, "llama-server --swa-full (full-size sliding-window cache)")
KV_BYTES = Option(
    "kv-bytes", int, help="vLLM --kv-cache-memory-bytes (default: slots x context)", low=1, high=2**60
)
