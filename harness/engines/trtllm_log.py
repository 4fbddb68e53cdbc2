"""Read TensorRT-LLM's start-up log (trtllm-serve, both the TensorRT engine and the PyTorch
backend): the paged KV cache it allocated. Pure: text in, facts out.

The lab caps the pool with ``kv_cache_config.max_tokens``; TensorRT-LLM allocates the lesser of
that cap and its free-memory fraction, rounded to whole blocks, and says which it took in
``Allocated X GiB for max tokens in paged KV cache (N)``.
"""

from __future__ import annotations

import re

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

_ALLOCATED = re.compile(r"Allocated ([\d.]+) GiB for max tokens in paged KV cache \((\d+)\)")
_BLOCKS = re.compile(r"Number of blocks in KV cache primary pool: (\d+)")
_SECONDARY = re.compile(r"Number of blocks in KV cache secondary pool: (\d+)")
_PER_BLOCK = re.compile(r"Number of tokens per block: (\d+)")
_PAGES = re.compile(r"Max KV cache (?:pages|blocks) per sequence: (\d+)")
# Newer builds say it in one line: "Max KV cache blocks per sequence: 65 [window size=2051], tokens per
# block=32, primary blocks=116617, secondary blocks=0"
_ONE_LINE = re.compile(r"tokens per block=(\d+), primary blocks=(\d+)(?:, secondary blocks=(\d+))?")
_VERSION = re.compile(r"TensorRT-LLM version: (\S+)|Engine version (\S+) found in the config")
# Each limit as the PyTorch backend's settings (max_batch_size=8) or the C++ runtime's
# (TRTGptModel maxBatchSize: 8)
_SETTINGS = {
    key: re.compile(rf"\b(?:{key}\s*[=:]|TRTGptModel {camel}:)\s*(\d+)")
    for key, camel in (
        ("max_batch_size", "maxBatchSize"),
        ("max_num_tokens", "maxNumTokens"),
        ("max_seq_len", "maxSequenceLen"),
    )
}
_MARKERS = re.compile(r"\[TensorRT-LLM\]|\[TRT-LLM\]|tensorrt_llm")


def parse(text: str) -> dict:
    """Every KV fact the log states (keys whose line is absent are left out); the last figure when
    a line repeats (a warm-up then the real allocation)."""
    out: dict = {}
    if hits := _ALLOCATED.findall(text):
        gib, tokens = hits[-1]
        out["kv_gib"], out["kv_max_tokens"] = float(gib), int(tokens)
    for key, pattern in (
        ("kv_blocks", _BLOCKS),
        ("secondary_blocks", _SECONDARY),
        ("tokens_per_block", _PER_BLOCK),
        ("pages_per_sequence", _PAGES),
    ):
        if hits := pattern.findall(text):
            out[key] = int(hits[-1])
    if hits := _ONE_LINE.findall(text):
        per_block, primary, secondary = hits[-1]
        out.setdefault("tokens_per_block", int(per_block))
        out.setdefault("kv_blocks", int(primary))
        if secondary:
            out.setdefault("secondary_blocks", int(secondary))
    for key, pattern in _SETTINGS.items():  # the last: the PyTorch backend sizes twice, then adjusts
        if hits := pattern.findall(text):
            out[key] = int(hits[-1])
    if m := _VERSION.search(text):
        out["version"] = m[1] or m[2]
    return out


def states_allocation(text: str) -> bool:
    return bool(_ALLOCATED.search(text) or _BLOCKS.search(text) or _ONE_LINE.search(text))


def looks_like(text: str) -> bool:
    return bool(_MARKERS.search(text))


def pool_tokens(facts: dict) -> int | None:
    """Tokens the paged KV cache holds: the allocated line's count, else blocks x tokens per block."""
    if facts.get("kv_max_tokens") is not None:
        return int(facts["kv_max_tokens"])
    if facts.get("kv_blocks") and facts.get("tokens_per_block"):
        return int(facts["kv_blocks"]) * int(facts["tokens_per_block"])
    return None


def unread(facts: dict) -> str:
    version = f" {facts['version']}" if facts.get("version") else ""
    return (
        f"this TensorRT-LLM{version} log has no paged KV cache line the harness knows ('Allocated X GiB "
        "for max tokens in paged KV cache (N)' or 'Number of blocks in KV cache primary pool'); pass the "
        "whole start-up log"
    )
