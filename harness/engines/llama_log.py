"""Read llama.cpp's load log (llama-server, and the runners that print its lines) across its
spellings since 2024. Pure: text in, facts out.

The KV cache line changed name four times, and its numbers changed meaning once:
- ``llama_new_context_with_model: KV self size = ...`` (2024), ``llama_init_from_model`` and
  ``llama_kv_cache_unified: KV self size`` (2025): one buffer that every sequence shares; its cells
  are the context's ``kv_size`` or ``n_ctx``, logged on an earlier line.
- ``llama_kv_cache_unified: size = ... (N cells, L layers, S seqs)`` (mid 2025): still one buffer.
- ``llama_kv_cache: size = ... (N cells, L layers, S/T seqs)`` (since August 2025): S sequences in
  T streams of N cells each. A unified cache (the default when ``--parallel`` is not given) is one
  stream that S sequences share; per-slot caches are one stream each. The pool is N x T.
"""

from __future__ import annotations

import re

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

_NUM = r"([\d.]+)"
# Every spelling of the size line: the new one, the mid-2025 one (no streams) and "KV self size".
_SIZE = re.compile(
    r"(?P<who>llama_kv_cache\w*|llama_new_context_with_model|llama_init_from_model|llama_context): "
    r"(?:KV self )?size\s*=\s*" + _NUM + r" MiB"
    r"(?: \(\s*(?P<cells>\d+) cells,\s*(?P<layers>\d+) layers,"
    r"\s*(?P<seqs>\d+)(?:/\s*(?P<streams>\d+))? seqs\))?"
    r",\s*K \((?P<k>\w+)\):\s*[\d.]+ MiB,\s*V \((?P<v>\w+)\):\s*[\d.]+ MiB"
)
_KV_SIZE = re.compile(r"\bkv_size\s*=\s*(\d+)")
_KV_LAYERS = re.compile(r"\bkv_size\s*=\s*\d+.*?\bn_layer\s*=\s*(\d+)")
_N_CTX = re.compile(
    r"(?:^|\s)(?:llama_new_context_with_model|llama_init_from_model|llama_context):\s+n_ctx\s*=\s*(\d+)"
)
# 2023: ``llama_new_context_with_model: kv self size  = 1024.00 MB`` (MiB, in fact), no K and V apart
_SIZE_2023 = re.compile(
    r"(?:llama_new_context_with_model|llama_kv_cache_init): kv self size\s*=\s*" + _NUM + " MB"
)
_KV_BUF = re.compile(r"(\S+) KV buffer size\s*=\s*" + _NUM + " MiB")
_SLOTS_NEW = re.compile(r"n_slots = (\d+), n_ctx_slot = (\d+)")
_SLOTS_COUNT = re.compile(r"""initializing slots"?,\s*"?n_slots"?\s*[=:]\s*(\d+)""")
_SLOT_CTX = re.compile(r"""new slot"?,?\s*(?:"id_slot":\d+,)?\s*"?n_ctx(?:_slot)?"?\s*[=:]\s*(\d+)""")
_UNIFIED = re.compile(r"kv_unified\s*=\s*'?(true|false)'?")
_OFFLOAD = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_DEVICE = re.compile(r"using device (\S+)")
# "using device Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits)) (unknown id) - 2048 MiB free": the name
# may hold parentheses; newer builds add the PCI id in its own.
_DEVICE_LINE = re.compile(r"using device (\S+) \((.*?)\)(?: \([^()]*\))? - (\d+) MiB free")
# ``load_tensors: CUDA0 model buffer size`` and the older ``llm_load_tensors: CUDA0 buffer size``
_MODEL_BUF = re.compile(
    r"(?:^|\s)(?:llm_)?load_tensors:\s+(\S+) (?:model )?buffer size\s*=\s*" + _NUM + " MiB"
)
_COMPUTE_BUF = re.compile(r"(\S+) compute buffer size\s*=\s*" + _NUM + " MiB")
_BUILD = re.compile(r"\b(?:build|version)\s*[:=]\s*(\d+) \((\w+)\)")
# Lines only llama.cpp prints: a log with one of these is llama.cpp's even when no KV line is read.
_MARKERS = re.compile(
    r"llama_model_loader:|llm_load_print_meta:|print_info: |load_tensors:|llama_context:|llama_kv_cache|ggml_"
)


def _caches(text: str) -> list[dict]:
    """One entry per KV size line, in order; an old line's cells from the context it belongs to. A
    context whose log shows only its per-device KV buffers (the size line cut off) counts those."""
    caches: list[dict] = []
    kv_size = n_ctx = layers = None
    buffers = 0.0  # KV buffer MiB of the current context not yet followed by its size line
    for line in text.splitlines():
        if m := _KV_SIZE.search(line):
            kv_size = int(m[1])
            lm = _KV_LAYERS.search(line)
            layers = int(lm[1]) if lm else None
        if m := _N_CTX.search(line):
            if buffers:
                caches.append(_old_cache(buffers, kv_size or n_ctx, layers, None, None))
            n_ctx, kv_size, buffers = int(m[1]), None, 0.0
        if m := _KV_BUF.search(line):
            buffers += float(m[2])
        if m := _SIZE_2023.search(line):
            caches.append(_old_cache(float(m[1]), kv_size or n_ctx, layers, None, None))
            buffers = 0.0
            continue
        m = _SIZE.search(line)
        if not m:
            continue
        buffers = 0.0
        if m["cells"]:
            cache: dict = {"mib": float(m[2]), "cells": int(m["cells"]), "layers": int(m["layers"])}
            cache["seqs"] = int(m["seqs"])
            cache["streams"] = int(m["streams"]) if m["streams"] else 1  # before streams: one buffer
            caches.append({**cache, "k_type": m["k"], "v_type": m["v"]})
        else:
            caches.append(_old_cache(float(m[2]), kv_size or n_ctx, layers, m["k"], m["v"]))
    if buffers:
        caches.append(_old_cache(buffers, kv_size or n_ctx, layers, None, None))
    return caches


def _old_cache(mib: float, cells: int | None, layers: int | None, k: str | None, v: str | None) -> dict:
    """A cache from a line that states its size only: one buffer every sequence shares."""
    cache: dict = {"mib": mib}
    if cells:
        cache["cells"] = cells
    if layers:
        cache["layers"] = layers
    cache["streams"] = 1
    if k:
        cache.update(k_type=k, v_type=v)
    return cache


def parse(text: str) -> dict:
    """Every allocation fact the log states. Keys whose line is absent are left out (``devices``,
    the buffers and ``kv_caches`` are empty instead)."""
    out: dict = {"kv_caches": _caches(text)}
    if m := _SLOTS_NEW.search(text):
        out["n_slots"], out["n_ctx_slot"] = int(m[1]), int(m[2])
    else:
        if m := _SLOTS_COUNT.search(text):
            out["n_slots"] = int(m[1])
        if m := _SLOT_CTX.search(text):
            out["n_ctx_slot"] = int(m[1])
    if m := _UNIFIED.search(text):
        out["kv_unified"] = m[1] == "true"
    if m := _OFFLOAD.search(text):
        out["offloaded_layers"] = [int(m[1]), int(m[2])]
    out["devices"] = list(dict.fromkeys(_DEVICE.findall(text)))
    described = {m[0]: {"name": m[1], "free_mib": int(m[2])} for m in _DEVICE_LINE.findall(text)}
    if described:
        out["device_names"] = described
    out["model_buffers_mib"] = _buffers(_MODEL_BUF, text)
    out["kv_buffers_mib"] = _buffers(_KV_BUF, text)
    out["compute_buffers_mib"] = _buffers(_COMPUTE_BUF, text)
    out["prompt_cache_disabled"] = "prompt cache is disabled" in text
    if m := _BUILD.search(text):
        out["build"] = f"{m[1]} ({m[2]})"
    return out


def _buffers(pattern: re.Pattern, text: str) -> dict[str, float]:
    """Buffer name -> MiB; a name logged twice (two contexts, a reload) keeps its last figure."""
    return {k: float(v) for k, v in pattern.findall(text)}


def states_allocation(text: str) -> bool:
    """Whether the text has a KV size line or a slot line this module reads."""
    return bool(_SIZE.search(text) or _SLOTS_NEW.search(text) or _SLOTS_COUNT.search(text))


def looks_like(text: str) -> bool:
    """Whether the text is llama.cpp's by lines only it prints, KV line or not."""
    return bool(_MARKERS.search(text))


def pool_tokens(facts: dict) -> int | None:
    """Tokens of KV the full-attention cache holds for all sequences together: cells x streams.
    A sliding-window model logs a smaller second cache; the full one has the most cells. None when
    no cache states its cells."""
    sized = [c for c in facts.get("kv_caches") or [] if c.get("cells")]
    if not sized:
        return None
    full = max(sized, key=lambda c: c["cells"])
    return int(full["cells"] * full.get("streams", 1))


def buffer_devices(facts: dict) -> list[str]:
    """The accelerators the buffers name (``CUDA0`` of ``CUDA0 model buffer``), for logs older than
    the ``using device`` line; host buffers (CPU, CPU_Mapped, CUDA_Host, ...) are left out."""
    names = [*(facts.get("model_buffers_mib") or {}), *(facts.get("kv_buffers_mib") or {})]
    return list(
        dict.fromkeys(n for n in names if not n.upper().startswith("CPU") and not n.endswith("_Host"))
    )


def unread(facts: dict) -> str:
    """One line saying what this reader could not find, naming the build when the log states it."""
    build = f" (build {facts['build']})" if facts.get("build") else ""
    return (
        f"this llama.cpp log{build} has no KV cache size line in a spelling the harness knows "
        "('llama_kv_cache: size = ...', 'llama_kv_cache_unified: size = ...' or '... KV self size = ...'); "
        "start llama-server with --verbosity 4 or pass the whole load log"
    )
