"""Read what an engine says it allocated, from its own load log. Pure: text in, facts out.
Both shapes of llama-server's slot lines are understood (older builds print them apart)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.core.predictions import Prediction

_KV = re.compile(
    r"llama_kv_cache: size =\s*([\d.]+) MiB \(\s*(\d+) cells,\s*(\d+) layers,\s*(\d+)/(\d+) seqs\), "
    r"K \((\w+)\):\s*([\d.]+) MiB, V \((\w+)\):\s*([\d.]+) MiB"
)
_SLOTS_NEW = re.compile(r"n_slots = (\d+), n_ctx_slot = (\d+)")
_SLOTS_COUNT = re.compile(r"initializing slots, n_slots = (\d+)")
_SLOT_CTX = re.compile(r"new slot,? n_ctx(?:_slot)? = (\d+)")
_OFFLOAD = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_DEVICE = re.compile(r"using device (\S+)")
_MODEL_BUF = re.compile(r"(\S+) model buffer size =\s*([\d.]+) MiB")
_COMPUTE_BUF = re.compile(r"(\S+) compute buffer size =\s*([\d.]+) MiB")
_VLLM_TOKENS = re.compile(r"([GC]PU) KV cache size: ([\d,]+) tokens")  # vLLM's CPU build says CPU
_VLLM_CONC = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
_VLLM_AVAIL = re.compile(r"Available KV cache memory: ([\d.]+) GiB")
_VLLM_LOAD = re.compile(r"Model loading took ([\d.]+) GiB")
# vLLM's CPU build sizes its pool from --gpu-memory-utilization x the memory it counts on the NUMA node,
# and says both: "Auto set (0.85/17.84) GiB for KV cache on node 0, with 2.68 GiB requested memory ..."
_VLLM_CPU_AUTO = re.compile(r"Auto set \(([\d.]+)/([\d.]+)\) GiB for KV cache")


def _num(text: str) -> int:
    return int(text.replace(",", ""))


def parse_llama_server(text: str) -> dict:
    caches = [
        {
            "mib": float(m[1]),
            "cells": int(m[2]),
            "layers": int(m[3]),
            "seqs": int(m[4]),
            "k_type": m[6],
            "v_type": m[8],
        }
        for m in _KV.finditer(text)
    ]
    out: dict = {"kv_caches": caches}
    if m := _SLOTS_NEW.search(text):
        out["n_slots"], out["n_ctx_slot"] = int(m[1]), int(m[2])
    else:
        if m := _SLOTS_COUNT.search(text):
            out["n_slots"] = int(m[1])
        if m := _SLOT_CTX.search(text):
            out["n_ctx_slot"] = int(m[1])
    if m := _OFFLOAD.search(text):
        out["offloaded_layers"] = [int(m[1]), int(m[2])]
    out["devices"] = list(dict.fromkeys(_DEVICE.findall(text)))
    out["model_buffers_mib"] = {k: float(v) for k, v in _MODEL_BUF.findall(text)}
    out["compute_buffers_mib"] = {k: float(v) for k, v in _COMPUTE_BUF.findall(text)}
    out["prompt_cache_disabled"] = "prompt cache is disabled" in text
    return out


def parse_vllm(text: str) -> dict:
    out: dict = {}
    if m := _VLLM_TOKENS.search(text):
        out["kv_tokens"], out["kv_device"] = _num(m[2]), m[1]
    if m := _VLLM_CONC.search(text):
        out["max_model_len"], out["max_concurrency"] = _num(m[1]), float(m[2])
    if m := _VLLM_AVAIL.search(text):
        out["available_kv_gib"] = float(m[1])
    if m := _VLLM_LOAD.search(text):
        out["model_loading_gib"] = float(m[1])
    if m := _VLLM_CPU_AUTO.search(text):  # the CPU build: the pool and the total it took a share of
        out["cpu_kv_gib"], out["memory_total_gib"] = float(m[1]), float(m[2])
    return out


def detect_engine(text: str) -> str | None:
    if _KV.search(text) or _SLOTS_NEW.search(text) or _SLOTS_COUNT.search(text):
        return "llama-server"
    if _VLLM_TOKENS.search(text):
        return "vllm"
    return None


def pool_tokens(engine: str, facts: dict) -> int | None:
    """Tokens of KV the engine holds for all sequences together (full-attention cache for llama-server)."""
    if engine == "vllm":
        tokens = facts.get("kv_tokens")
        return int(tokens) if tokens is not None else None
    caches = facts.get("kv_caches") or []
    if not caches:
        return None
    full = max(caches, key=lambda c: c["cells"])
    return int(full["cells"] * full["seqs"])


def compare(engine: str, observed: dict, predicted: Prediction) -> list[str]:
    """Every way the log disagrees with the prediction, each naming both figures and a likely cause."""
    problems: list[str] = []
    if engine == "llama-server":
        want = predicted.caches
        got = observed.get("kv_caches") or []
        if not got:
            return [
                "the log has no 'llama_kv_cache: size = ...' line; start llama-server with --verbosity 4 "
                "(or a build that logs it) and pass that log"
            ]
        if len(got) != len(want):
            problems.append(
                f"the log shows {len(got)} KV cache(s), the prediction {len(want)}: a sliding-window model "
                "logs one cache per attention kind; check the model file"
            )
        for w, g in zip(want, got, strict=False):  # a count mismatch is reported above
            mib = w["bytes"] / 2**20
            if abs(g["mib"] - mib) > 0.01 or g["cells"] != w["cells"] or g["seqs"] != w["seqs"]:
                cause = []
                if g["cells"] != w["cells"]:
                    cause.append(
                        f"context per slot (log {g['cells']} cells, predicted {w['cells']}; "
                        f"n_ctx_slot = {observed.get('n_ctx_slot', '?')})"
                    )
                if g["seqs"] != w["seqs"]:
                    cause.append(f"slots (log {g['seqs']} seqs, predicted {w['seqs']})")
                if g["layers"] != w["layers"]:
                    cause.append(f"layers (log {g['layers']}, predicted {w['layers']})")
                if g["k_type"] != predicted_type(predicted):
                    cause.append(f"cache type (log {g['k_type']}, predicted {predicted_type(predicted)})")
                problems.append(
                    f"KV cache: log says {g['mib']:.2f} MiB ({g['cells']} cells, {g['layers']} layers, "
                    f"{g['seqs']} seqs) but the prediction is {mib:.2f} MiB ({w['cells']} cells, "
                    f"{w['layers']} layers, {w['seqs']} seqs); likely cause: "
                    + ("; ".join(cause) or "bytes per value differ: check the cache type")
                )
    else:
        got = observed.get("kv_tokens")
        if got is None:
            return [
                "the log has no 'GPU KV cache size: N tokens' (or CPU) line; pass the vLLM server's startup "
                "log"
            ]
        if got != predicted.vllm_tokens:
            problems.append(
                f"KV pool: log says {got:,} tokens but the prediction is {predicted.vllm_tokens:,} tokens; "
                "likely cause: another block size (16 on GPUs, 128 on the CPU build), a different KV dtype, "
                "sliding-window layers the model description lacks, or the memory fraction deciding the pool "
                "instead of --kv-cache-memory-bytes"
            )
        problems += _vllm_concurrency(observed, predicted)
    return problems


def _vllm_concurrency(observed: dict, predicted: Prediction) -> list[str]:
    """The logged maximum concurrency against the pool arithmetic (blocks / blocks per request)."""
    pool = getattr(predicted, "vllm_pool", None) or {}
    conc = observed.get("max_concurrency")
    if not pool or conc is None or abs(conc - round(pool["max_concurrency"], 2)) <= 0.005:
        return []
    return [
        f"maximum concurrency: log says {conc:.2f}x but the prediction is {pool['max_concurrency']:.2f}x "
        f"({pool['num_blocks']:,} blocks / {pool['blocks_per_request']} per request); likely cause: "
        "max_model_len or max_num_batched_tokens differ"
    ]


def predicted_type(predicted: Prediction) -> str:
    line = predicted.log_lines[0] if predicted.log_lines else ""
    m = re.search(r"K \((\w+)\)", line)
    return m[1] if m else "?"


# The lab's advice when the control would be measured on the CPU (both labs' Troubleshooting).
CPU_ADVICE = (
    "everything after this would measure the CPU: a CPU-only build, or llama_bin points at one; run "
    "llama-server --list-devices from that directory and rebuild with the GPU backend (Part 6)"
)


def accelerator_problems(
    observed: dict, offload: bool = False, device: str | None = None, prompt_cache_off: bool = False
) -> list[str]:
    """What a llama-server load log must also show before it is measured as the accelerator: every
    layer offloaded (``offload``), the expected device (``device``: ROCm0 for the HIP build), and
    the host-RAM prompt cache off (``prompt_cache_off``). Each problem names what the log says."""
    problems: list[str] = []
    layers = observed.get("offloaded_layers")
    buffers = ", ".join(observed.get("model_buffers_mib") or {}) or "none"
    if offload and layers is None:
        problems.append(
            f"the log has no 'offloaded N/N layers to GPU' line (model buffers: {buffers}); {CPU_ADVICE}"
        )
    elif offload and layers is not None and layers[0] < layers[1]:
        done, total = layers
        problems.append(f"offloaded {done}/{total} layers to GPU, not {total}/{total}; {CPU_ADVICE}")
    found = observed.get("devices") or []
    if device == "CPU":  # a CPU build names no device: its model buffers are the CPU's, none a GPU's
        others = [k for k in observed.get("model_buffers_mib") or {} if not k.upper().startswith("CPU")]
        if found or others or not observed.get("model_buffers_mib"):
            problems.append(
                f"the log {'uses ' + ', '.join(found) if found else 'names model buffers ' + buffers}, "
                "not only the CPU: a rehearsal's stand-in is the CPU build"
            )
    elif device and device not in found:
        said = f"uses {', '.join(found)}" if found else "names no 'using device' line"
        problems.append(
            f"the log {said}, not {device}: llama_bin points at another build than this block's; run "
            "llama-server --list-devices from that directory"
        )
    if prompt_cache_off and not observed.get("prompt_cache_disabled"):
        problems.append(
            "the log lacks 'prompt cache is disabled': start llama-server with --cache-ram 0, so this row "
            "allocates what the other engines' rows do"
        )
    return problems


_DEVICE_LINE = re.compile(r"^\s*(\S+): (.*?) \((\d+) MiB, (\d+) MiB free\)")


def device_memory(text: str) -> list[dict]:
    """``llama-server --list-devices``' device lines (``Vulkan0: AMD Radeon ... (98304 MiB, 97000 MiB
    free)``) as name, description, total and free MiB. On a unified machine the free figure is the
    GPU-visible memory the KV pool comes out of (the serving lab's preflight, Track X)."""
    out = []
    for line in text.splitlines():
        m = _DEVICE_LINE.match(line)
        if m:
            out.append({"device": m[1], "name": m[2], "total_mib": int(m[3]), "free_mib": int(m[4])})
    return out


def buffer_problems(observed: dict, fmt: dict | None, tolerance: float = 0.01) -> list[str]:
    """The engines lab's Task 4 reading of a GPU load log: the model buffers add up to the file's
    tensor bytes (about 4,789 MiB for Qwen3-8B Q4_K_M), and the host's ``CPU_Mapped`` buffer is the
    input embedding (about 334 MiB), which stays in host memory. Checked only when a device buffer
    is logged (a CPU build may repack weights into extra buffers) and the format's bytes are known."""
    buffers = observed.get("model_buffers_mib") or {}
    device = [k for k in buffers if not k.upper().startswith("CPU")]
    if not fmt or not device:
        return []
    problems = []
    total, want = sum(buffers.values()), int(fmt["tensor_bytes"]) / 2**20
    if abs(total - want) > tolerance * want:
        parts = " + ".join(f"{k} {v:,.2f}" for k, v in buffers.items())
        problems.append(
            f"model buffers: {parts} = {total:,.2f} MiB, but the model file's tensors are {want:,.2f} MiB; "
            "likely cause: another model file or quantisation than the one predicted"
        )
    host, embedding = buffers.get("CPU_Mapped"), int(fmt.get("embedding_bytes") or 0) / 2**20
    if host is not None and embedding and abs(host - embedding) > tolerance * embedding + 1:
        problems.append(
            f"CPU_Mapped model buffer {host:,.2f} MiB, but the input embedding is {embedding:,.2f} MiB: more "
            "than the embedding stayed in host memory, so some layers were not offloaded (check "
            "--n-gpu-layers and the offloaded line)"
        )
    return problems


def expected_lines(text: str, expects: list[dict]) -> list[tuple[bool, str, str]]:
    """Each line an engine definition's ``log_expect`` names: (found, what it says, the line or the
    pattern looked for), the last matching line when there are several."""
    out = []
    for want in expects:
        pattern = re.compile(want["pattern"])
        hits = [line.strip() for line in text.splitlines() if pattern.search(line)]
        out.append((bool(hits), want["says"], hits[-1] if hits else want["pattern"]))
    return out
