"""The engine comparison's explanation of its differences, pure arithmetic: which
weight format an engine served, the bytes each format reads per token, the decode ratio the formats
predict against the one measured, each engine's own ceiling, and the memory its source can see.

Formats come from the model table (``tensor_bytes`` and ``embedding_bytes`` per format); the rules
for what a memory source sees of an engine come from ``data/visible_memory.yaml``."""

from __future__ import annotations

import math
import re

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

MB = 1e6
AS_PREDICTED = 0.05  # a measured ratio within 5 % of the predicted one reads "as predicted"


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[\s,()/]+", text.lower()) if w]


def format_for_quant(quant: str, formats: dict) -> str | None:
    """The model-table format an engine's ``quant`` text names, or None.

    A format is named by any word of its key that no other format shares (``Q4_K_M`` names
    ``GGUF Q4_K_M``, ``MLX`` names ``MLX 4-bit g64``); the quant's first such word wins, so
    ``bf16 (from Q4_K_M)`` is bf16: what is in parentheses is not read."""
    quant = (quant or "").split("(")[0]  # "bf16 (from Q4_K_M)" served bf16: its source is not its format
    counts: dict[str, int] = {}
    for key in formats:
        for word in set(_words(key)):
            counts[word] = counts.get(word, 0) + 1
    for word in _words(quant or ""):
        for key in formats:
            if word in _words(key) and counts[word] == 1:
                return str(key)
    return None


def read_bytes(fmt: dict) -> int:
    """Bytes one decoded token reads: every tensor but the input embedding (looked up one row)."""
    return int(fmt["tensor_bytes"]) - int(fmt["embedding_bytes"])


def predicted_ratio(native: dict, portable: dict) -> float:
    """Native / portable decode rate that bandwidth alone predicts: the inverse ratio of bytes read."""
    return read_bytes(portable) / read_bytes(native)


def ratio_verdict(measured: float, predicted: float) -> str:
    """``as predicted``, ``lower`` or ``higher`` (beyond :data:`AS_PREDICTED` of the prediction)."""
    if abs(measured / predicted - 1) <= AS_PREDICTED:
        return "as predicted"
    return "lower" if measured < predicted else "higher"


def rule_for(engine: str, rules: dict) -> tuple[str, dict] | None:
    """The visible-memory rule whose name the engine's name starts with (the longest such)."""
    names = [name for name in rules if engine.lower().startswith(name.lower())]
    if not names:
        return None
    name = max(names, key=len)
    return name, rules[name]


def cache_tokens(rule: dict, context: int, long_tokens: float | None) -> int:
    """Tokens the engine's KV cache holds during the measurement: the stated context, or (an
    engine whose cache grows with the request, mlx_lm) the long test's tokens rounded up to its step."""
    if rule.get("kv") == "grows":
        if not long_tokens:
            raise ValueError("a growing cache needs the long test's prompt and output tokens")
        step = int(rule.get("step", 256))
        return int(math.ceil(long_tokens / step) * step)
    return int(context)


def visible_bytes(rule: dict, fmt: dict, kv_token: float, tokens: int, mapped_pages: bool) -> tuple:
    """(low, high) bytes the memory source can see of weights plus cache; low == high but for
    llama.cpp's memory-mapped weights under vm_stat, which counts anywhere from none to all of them.

    ``rule['kv']`` is ``context`` or ``grows`` (``tokens`` x bytes per token) or ``bytes`` (the pool
    the engine was told, ``rule['kv_bytes']``); ``rule['embedding']`` is ``host`` when the input
    embedding stays in host memory the GPU counters and MemAvailable do not see."""
    kv = int(rule["kv_bytes"]) if rule.get("kv") == "bytes" else int(kv_token * tokens)
    if rule.get("mapped") and mapped_pages:
        return kv, kv + int(fmt["tensor_bytes"])
    weights = read_bytes(fmt) if rule.get("embedding") == "host" else int(fmt["tensor_bytes"])
    return weights + kv, weights + kv


def overhead_mb(added_mb: float, visible: tuple) -> tuple:
    """(low, high) MB the engine added beyond the weights and cache its source sees (the CUDA or
    Metal context, compute buffers, the server process); negative means something unseen was
    subtracted. MB are 1,000,000 bytes."""
    low, high = visible
    return added_mb - high / MB, added_mb - low / MB


def share(measured: float, ceiling: float) -> float:
    """A measured rate as a share of a ceiling (above 1: the bandwidth figure is wrong)."""
    if ceiling <= 0:
        raise ValueError("a ceiling must be positive")
    return measured / ceiling
