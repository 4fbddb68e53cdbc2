"""What vLLM's CPU stand-in computes in on this machine: the CPU's flags, the ``--dtype`` its
kernels run fastest at, and what a rehearsal overlay's ``@vllm-cpu-dtype``, ``@vllm-cpu-kv-type``
and ``@vllm-cpu-precision`` become here."""

from __future__ import annotations

from pathlib import Path


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


# The CPU instructions with which vLLM's CPU kernels run bf16 matrices natively (oneDNN).
BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def compute_dtype(cpuinfo: str | None = None) -> str:
    """The ``--dtype`` the stand-in serves at: bfloat16 where the CPU multiplies bf16 itself, else
    float32 (the bf16 weights upcast at load). With AVX2 alone oneDNN has no bf16 linear and vLLM
    falls back to torch's, about five times slower at prefill: a 1,203-token prompt took 32.9 s
    at bfloat16 and 8.9 s at float32 on this project's AMD EPYC VM (docs/measurements.md)."""
    return "bfloat16" if cpu_flags(cpuinfo) & set(BF16_FLAGS) else "float32"


# What a rehearsal overlay asks of the served precision ('@vllm-cpu-dtype' and so on): vLLM's
# --dtype, the KV cache's type ("auto" follows the dtype) as verify-allocation names it, and the
# record's quantisation in words.
PRECISION_KINDS = {
    "vllm-cpu-dtype": {"bfloat16": "bfloat16", "float32": "float32"},
    "vllm-cpu-kv-type": {"bfloat16": "bf16", "float32": "f32"},
    "vllm-cpu-precision": {
        "bfloat16": "bf16 (from Q4_K_M)",
        "float32": "bf16 weights served at fp32: this CPU has no bf16 instructions (from Q4_K_M)",
    },
}


def precision(kind: str, cpuinfo: str | None = None) -> str:
    return PRECISION_KINDS[kind][compute_dtype(cpuinfo)]
