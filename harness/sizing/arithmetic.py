"""Serving arithmetic: pure functions with the seeds' definitions (docs/architecture.md, "Definitions")."""

from __future__ import annotations

from harness import lab
from harness.records.engine import SpeedLimit

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

MIB = 1024 * 1024

# Bytes per cached value for each KV cache type: q8_0 stores 32 values in 34 bytes, q4_0 in 18.
BYTES_PER_VALUE = {"f32": 4.0, "f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32, "fp8": 1.0}


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, cache_type: str = "f16") -> float:
    """2 (K and V) x layers x KV heads x head_dim x bytes per value."""
    try:
        per_value = BYTES_PER_VALUE[cache_type]
    except KeyError:
        raise ValueError(
            f"unknown cache type {cache_type!r}; use one of {', '.join(BYTES_PER_VALUE)}"
        ) from None
    return 2 * layers * kv_heads * head_dim * per_value


def pad_to(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def llama_kv_caches(
    layers: int,
    kv_heads: int,
    head_dim: int,
    slots: int,
    ctx_per_slot: int,
    cache_type: str = "f16",
    swa_layers: int = 0,
    swa_window: int = 0,
    ubatch: int = 512,
    swa_full: bool = False,
    unified: bool = False,
) -> list[dict]:
    """The KV caches llama-server allocates for ``slots`` sequences of ``ctx_per_slot`` tokens.

    One entry per cache it logs. Per slot (explicit ``--parallel``, no ``--kv-unified``): one
    stream per slot, the full-attention layers holding ``ctx_per_slot`` cells each. Unified (the
    default when ``--parallel`` is not given): one stream of ``slots x ctx_per_slot`` cells that
    every sequence shares. Sliding-window layers (Gemma 3) hold the window (one per sequence when
    unified) plus one micro-batch, padded to 256 cells, never more than the full cache;
    ``--swa-full`` gives them the whole context, which llama-server needs to reuse a cached prefix
    longer than the window. Sizes are in bytes.
    """
    caches = []
    full_layers = layers - swa_layers
    per_cell_layer = 2 * kv_heads * head_dim * BYTES_PER_VALUE[cache_type]
    streams = 1 if unified else slots
    base = slots * ctx_per_slot if unified else ctx_per_slot
    if full_layers > 0:
        caches.append(_cache(base, full_layers, slots, streams, per_cell_layer))
    if swa_layers > 0:
        window = swa_window * (slots if unified else 1)
        cells = base if swa_full else min(base, pad_to(window + ubatch, 256))
        caches.append(_cache(cells, swa_layers, slots, streams, per_cell_layer))
    return caches


def _cache(cells: int, layers: int, seqs: int, streams: int, per_cell_layer: float) -> dict:
    """One logged cache: ``cells`` per stream, ``streams`` of them."""
    return {
        "cells": cells,
        "layers": layers,
        "seqs": seqs,
        "streams": streams,
        "bytes": cells * layers * per_cell_layer * streams,
    }


def llama_kv_log_line(cache: dict, cache_type: str = "f16") -> str:
    """The ``llama_kv_cache: size = ...`` line llama-server prints for one cache."""
    total = cache["bytes"] / MIB
    half = total / 2
    return (
        f"llama_kv_cache: size = {total:7.2f} MiB ({cache['cells']:6d} cells, {cache['layers']:3d} layers, "
        f"{cache['seqs']:2d}/{cache.get('streams', cache['seqs'])} seqs), K ({cache_type}): {half:7.2f} MiB, "
        f"V ({cache_type}): {half:7.2f} MiB"
    )


def vllm_kv_log_lines(
    pool_tokens: int, max_model_len: int, concurrency: float | None = None, device: str = "GPU"
) -> list[str]:
    """vLLM's two startup lines for a pool of ``pool_tokens`` tokens (the CPU build says ``CPU``)."""
    if concurrency is None:
        concurrency = pool_tokens / max_model_len
    return [
        f"{device} KV cache size: {pool_tokens:,} tokens",
        f"Maximum concurrency for {max_model_len:,} tokens per request: {concurrency:.2f}x",
    ]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def vllm_kv_pool(
    layers: int,
    kv_heads: int,
    head_dim: int,
    kv_bytes: int,
    max_model_len: int,
    block_size: int = 16,
    cache_type: str = "f16",
    swa_layers: int = 0,
    swa_window: int = 0,
    in_flight_tokens: int = 2048,
) -> dict:
    """vLLM's (v1) KV pool for ``kv_bytes`` of cache, as its kv_cache_utils computes it.

    Layers are bucketed by attention kind (full, sliding window) and cut into KV cache groups of
    ``group_size`` layers (the smaller bucket's size; Gemma 3 270M: 3 full + 15 sliding layers ->
    six groups of 3). All groups draw from one pool whose block holds ``block_size`` tokens of
    ``group_size`` layers, so ``num_blocks = kv_bytes // (page per layer x group_size)``. A request of
    ``max_model_len`` needs ``cdiv(max_model_len, block)`` blocks in each full group and
    ``cdiv(min(window - 1 + in-flight tokens, max_model_len), block) + 1`` in each sliding group
    (in flight: max_num_batched_tokens x concurrent batches). vLLM logs
    ``concurrency = num_blocks / blocks per request`` and ``tokens = int(concurrency x max_model_len)``,
    which is why its token count is not ``num_blocks x block_size`` on a sliding-window model."""
    page = block_size * 2 * kv_heads * head_dim * BYTES_PER_VALUE[cache_type]  # one block of one layer
    full_layers = layers - swa_layers
    buckets = [n for n in (full_layers, swa_layers) if n > 0]
    group_size = min(buckets)
    if max(buckets) < group_size * 1.5:
        group_size = max(buckets)
    full_groups = cdiv(full_layers, group_size) if full_layers else 0
    swa_groups = cdiv(swa_layers, group_size) if swa_layers else 0
    num_blocks = int(kv_bytes // (page * group_size))
    full_blocks = cdiv(max_model_len, block_size)
    swa_blocks = cdiv(min(swa_window - 1 + in_flight_tokens, max_model_len), block_size) + 1
    per_request = full_groups * full_blocks + swa_groups * swa_blocks
    return {
        "block_size": block_size,
        "group_size": group_size,
        "groups": {"full": full_groups, "sliding": swa_groups},
        "block_bytes": int(page * group_size),
        "num_blocks": num_blocks,
        "blocks_per_request": per_request,
        "max_concurrency": num_blocks / per_request,
        "tokens": num_blocks * max_model_len // per_request,
    }


def speed_limit(bandwidth_gb_s: float, model_gb: float) -> float:
    """The speed limit: the fastest one person can be served, tokens/s = bandwidth / model size."""
    if model_gb <= 0:
        raise ValueError("model size must be positive")
    return bandwidth_gb_s / model_gb


def speed_limit_part(
    machine: str, bandwidth_gb_s: float, model_gb: float, measured_tok_s: float
) -> SpeedLimit:
    """A speed record's ``speed_limit`` part: the machine, its bandwidth, the model's size, the
    limit they make and the measured decode's share of it."""
    limit = speed_limit(bandwidth_gb_s, model_gb)
    share, _ = speed_share(measured_tok_s, limit)
    return SpeedLimit(machine, bandwidth_gb_s, model_gb, round(limit, 2), round(share, 3))


SANE_BAND = lab.band("sane_speed_share")  # where a sane single-user measurement lands, of the speed limit


def speed_share(measured_tok_s: float, limit_tok_s: float) -> tuple[float, str]:
    """A single-user decode rate as a share of the speed limit, and what the lab's band makes of it."""
    if limit_tok_s <= 0:
        raise ValueError("the speed limit must be positive")
    share = measured_tok_s / limit_tok_s
    low, high = SANE_BAND
    band = f"{low * 100:.0f}-{high * 100:.0f} %"
    if share > 1:
        return share, "above the limit: the bandwidth or the model size is wrong"
    if share > high:
        return share, f"above the {band} band: check the bandwidth figure and the model size"
    if share >= low:
        return share, f"within the lab's {band} band: the measurement makes sense"
    return share, f"below the {band} band: something else slows it (offload, CPU path, load)"


def tier_for_memory(tiers: list[str], memory_gib: float, slack: float = 0.05) -> str | None:
    """The largest tier (named by its size: ``16gb``, ``24gb``, ``32gb``) that fits ``memory_gib``,
    with ``slack`` for what a device reports below its nominal size; None when none fits or no tier
    is named by a size."""
    sized = []
    for name in tiers:
        digits = name.lower().removesuffix("gb")
        if digits.isdigit():
            sized.append((int(digits), name))
    fitting = [(size, name) for size, name in sized if size <= memory_gib * (1 + slack)]
    return max(fitting)[1] if fitting else None
