"""Read what an engine says it allocated, from its own load log, and set it against the
prediction. Pure: text in, facts out. Each engine's spellings live in its own reader
(llama_log, vllm_log, trtllm_log); this module picks the reader and compares."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.sizing.predictions import Prediction

from harness.engines import llama_log, trtllm_log, vllm_log

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

ENGINES = ("llama-server", "vllm", "trtllm")


def parse_llama_server(text: str) -> dict:
    return llama_log.parse(text)


def parse_vllm(text: str) -> dict:
    return vllm_log.parse(text)


def parse_trtllm(text: str) -> dict:
    return trtllm_log.parse(text)


PARSERS = {"llama-server": llama_log.parse, "vllm": vllm_log.parse, "trtllm": trtllm_log.parse}


def facts(engine: str, text: str) -> dict:
    """What ``engine``'s load log states about its allocation."""
    return PARSERS[engine](text)


def detect_engine(text: str) -> str | None:
    """Whose load log this is: first by an allocation line, then by lines only that engine prints."""
    readers = (("llama-server", llama_log), ("vllm", vllm_log), ("trtllm", trtllm_log))
    for engine, reader in readers:
        if reader.states_allocation(text):
            return engine
    for engine, reader in (readers[2], readers[0], readers[1]):  # vLLM's marker ("vllm") is the loosest
        if reader.looks_like(text):
            return engine
    return None


def pool_tokens(engine: str, facts: dict, block_size: int | None = None) -> int | None:
    """Tokens of KV the engine holds for all sequences together (full-attention cache for llama-server);
    ``block_size``: vLLM's tokens per block where a V0 log gives blocks but not their size."""
    if engine == "vllm":
        return vllm_log.pool_tokens(facts, block_size)
    if engine == "trtllm":
        return trtllm_log.pool_tokens(facts)
    return llama_log.pool_tokens(facts)


def unread(engine: str, facts: dict) -> str:
    """One line naming the engine (and version) whose pool this log does not state in a way read here."""
    return {"vllm": vllm_log.unread, "trtllm": trtllm_log.unread}.get(engine, llama_log.unread)(facts)


def compare(engine: str, observed: dict, predicted: Prediction, block_size: int | None = None) -> list[str]:
    """Every way the log disagrees with the prediction, each naming both figures and a likely cause.
    ``block_size``: vLLM's tokens per block, for a V0 log that counts its pool in blocks only."""
    if engine == "llama-server":
        return _llama_compare(observed, predicted)
    got = vllm_log.pool_tokens(observed, block_size)
    if got is None:
        return [unread("vllm", observed)]
    problems: list[str] = []
    if got != predicted.vllm_tokens:
        problems.append(
            f"KV pool: log says {got:,} tokens but the prediction is {predicted.vllm_tokens:,} tokens; "
            "likely cause: another block size (16 on GPUs, 128 on the CPU build), a different KV dtype, "
            "sliding-window layers the model description lacks, or the memory fraction deciding the pool "
            "instead of --kv-cache-memory-bytes"
        )
    return problems + _vllm_concurrency(observed, predicted)


def _llama_compare(observed: dict, predicted: Prediction) -> list[str]:
    want, got = predicted.caches, observed.get("kv_caches") or []
    if not got:
        return [unread("llama-server", observed)]
    problems: list[str] = []
    if len(got) != len(want):
        problems.append(
            f"the log shows {len(got)} KV cache(s), the prediction {len(want)}: a sliding-window model "
            "logs one cache per attention kind; check the model file"
        )
    for w, g in zip(want, got, strict=False):  # a count mismatch is reported above
        mib = w["bytes"] / 2**20
        w_streams = w.get("streams", w["seqs"])
        differs = [
            k for k in ("cells", "layers", "seqs", "streams") if k in g and g[k] != w.get(k, w_streams)
        ]
        if abs(g["mib"] - mib) <= 0.01 and not differs:
            continue
        cause = _causes(g, w, w_streams, observed, predicted)
        problems.append(
            f"KV cache: log says {_shape(g)} but the prediction is "
            f"{_shape({**w, 'mib': mib, 'streams': w_streams})}; likely cause: "
            + ("; ".join(cause) or "bytes per value differ: check the cache type")
        )
    return problems


def _shape(cache: dict) -> str:
    """``320.00 MiB (2048 cells, 40 layers, 4 seqs in 1 stream)``, with what the line stated."""
    parts = [f"{cache[k]} {k}" for k in ("cells", "layers") if k in cache]
    if "seqs" in cache:
        streams = cache.get("streams", 1)
        parts.append(f"{cache['seqs']} seqs in {streams} stream{'s' if streams != 1 else ''}")
    return f"{cache['mib']:.2f} MiB" + (f" ({', '.join(parts)})" if parts else "")


def _causes(g: dict, w: dict, w_streams: int, observed: dict, predicted: Prediction) -> list[str]:
    cause = []
    if "streams" in g and "seqs" in g and g["streams"] != w_streams:
        if g["streams"] == 1:
            cause.append(
                f"the log's cache is unified ({g['seqs']} sequences share one stream of {g['cells']:,} "
                "cells, the default when --parallel is not given); the prediction gives each slot its own: "
                "pass --kv-unified here, or start the server with --parallel N and no --kv-unified"
            )
        else:
            cause.append(
                f"streams (log {g['streams']}, predicted {w_streams}): per-slot against unified caches"
            )
    if "cells" in g and g["cells"] != w["cells"]:
        cause.append(
            f"context per slot (log {g['cells']} cells, predicted {w['cells']}; "
            f"n_ctx_slot = {observed.get('n_ctx_slot', '?')})"
        )
    if "seqs" in g and g["seqs"] != w["seqs"]:
        cause.append(f"slots (log {g['seqs']} seqs, predicted {w['seqs']})")
    if "layers" in g and g["layers"] != w["layers"]:
        cause.append(f"layers (log {g['layers']}, predicted {w['layers']})")
    if g.get("k_type", predicted_type(predicted)) != predicted_type(predicted):
        cause.append(f"cache type (log {g['k_type']}, predicted {predicted_type(predicted)})")
    return cause


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
    "llama-server --list-devices from that directory and rebuild with the GPU backend"
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
    found = observed.get("devices") or llama_log.buffer_devices(observed)  # older builds: the buffers
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
    GPU-visible memory the KV pool comes out of (the serving lab's preflight on a unified-memory machine)."""
    out = []
    for line in text.splitlines():
        m = _DEVICE_LINE.match(line)
        if m:
            out.append({"device": m[1], "name": m[2], "total_mib": int(m[3]), "free_mib": int(m[4])})
    return out


def buffer_problems(observed: dict, fmt: dict | None, tolerance: float = 0.01) -> list[str]:
    """The engines lab's reading of a GPU load log: the model buffers add up to the file's
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
