"""Predictions from stated inputs (docs/architecture.md, "Definitions"; both labs' prediction tables). Pure
functions: the arithmetic, and the two tables the lab pages print, reproduced from the same inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from harness.sizing.arithmetic import (
    MIB,
    kv_bytes_per_token,
    llama_kv_caches,
    llama_kv_log_line,
    vllm_kv_log_lines,
    vllm_kv_pool,
)

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

GIB = 2**30


class ModelShape(Protocol):
    """What the arithmetic reads of a model (``harness.engines.models.info.ModelInfo`` has it all)."""

    layers: int
    kv_heads: int
    head_dim: int
    swa_layers: int
    swa_window: int
    formats: dict


VLLM_BLOCK = 16


def kv_per_token(model: ModelShape, cache_type: str = "f16") -> float:
    value = kv_bytes_per_token(model.layers, model.kv_heads, model.head_dim, cache_type)
    return int(value) if value == int(value) else value


def decode_ceiling(
    bandwidth_gb_s: float, tensor_bytes: int, embedding_bytes: int, kv_token: float, context: int
) -> float:
    """Tokens/s one sequence can decode: bandwidth / (weights read + its cache over ``context`` tokens).
    The input embedding is a lookup of one row per token, so its table is not read whole."""
    return bandwidth_gb_s * 1e9 / (tensor_bytes - embedding_bytes + kv_token * context)


def aggregate_ceiling(
    bandwidth_gb_s: float, read_bytes: int, kv_token: float, batch: int, context: int
) -> tuple:
    """(aggregate tokens/s, per-sequence tokens/s) when ``batch`` sequences share each weight read."""
    per_sequence = bandwidth_gb_s * 1e9 / (read_bytes + batch * context * kv_token)
    return batch * per_sequence, per_sequence


# -- the labs' printed tables ----------------------------------------------------------------------


def serving_table(
    model: ModelShape,
    slots: int,
    ctx: int,
    engines: dict,
    machines: list[tuple[str, float]],
    read_format: str,
    contexts: tuple[int, ...] = (100, 1500),
    batches: tuple[int, ...] = (1, 5, 10, 20),
) -> str:
    """Pool per cache type, weights + pool per engine, and aggregate ceilings (the serving lab's table).
    ``engines``: label -> (format name, [cache types])."""
    tokens = slots * ctx
    caches = ["f16", "q8_0", "fp8"]
    lines = [f"KV pool for {slots} x {ctx:,} = {tokens:,} tokens"]
    for ct in caches:
        per = kv_per_token(model, ct)
        pool = per * tokens
        lines.append(f"  {ct:<5} {per:>7,} B/token {pool:>15,} B = {pool / GIB:5.2f} GiB")
    lines.append("Weights + pool, before compute buffers and graphs (GiB)")
    for engine, (fmt, types) in engines.items():
        weights = model.formats[fmt]["tensor_bytes"]
        for ct in types:
            lines.append(
                f"  {engine:<26} + {ct:<5} = {(weights + kv_per_token(model, ct) * tokens) / GIB:5.2f}"
            )
    f = model.formats[read_format]
    read = f["tensor_bytes"] - f["embedding_bytes"]
    lines.append(
        f"Bandwidth ceiling, {read_format.split()[-1]}, f16 cache: aggregate tok/s (per user) at batch B"
    )
    for label, gbps in machines:
        for context in contexts:
            cells = []
            for b in batches:
                total, per = aggregate_ceiling(gbps, read, kv_per_token(model, "f16"), b, context)
                cells.append(f"B={b:<2}{total:6.0f} ({per:5.1f})")
            lines.append(f"  {label:<19} ctx {context:>5}: " + "  ".join(cells))
    return "\n".join(lines)


def ceiling_table(
    model: ModelShape,
    pairs: list[tuple[str, float, list[str]]],
    cache_tokens: int = 8192,
    long_context: int = 1500,
) -> str:
    """Decode ceiling per machine and format, short and at ``long_context`` (the engines lab's table)."""
    per = kv_per_token(model, "f16")
    lines = [
        f"KV cache: {per:,} bytes per token; {cache_tokens:,} tokens = {per * cache_tokens:,} bytes = "
        f"{per * cache_tokens / MIB:,.2f} MiB",
        f"{'machine':<21}{'format':<16}{'weights GB':>11}{'read/token GB':>14}{'ceiling tok/s':>14}"
        f"{'at ' + format(long_context, ',') + ' ctx':>13}",
    ]
    for label, gbps, formats in pairs:
        for fmt in formats:
            f = model.formats[fmt]
            read = f["tensor_bytes"] - f["embedding_bytes"]
            lines.append(
                f"{label:<21}{fmt:<16}{f['tensor_bytes'] / 1e9:>11.2f}{read / 1e9:>14.2f}"
                f"{decode_ceiling(gbps, f['tensor_bytes'], f['embedding_bytes'], per, 0):>14.1f}"
                f"{decode_ceiling(gbps, f['tensor_bytes'], f['embedding_bytes'], per, long_context):>13.1f}"
            )
    return "\n".join(lines)


# -- one configuration -------------------------------------------------------------------------------


@dataclass
class Prediction:
    kv_per_token: float
    pool_bytes: float
    log_lines: list[str]
    caches: list[dict]
    vllm_tokens: int | None = None
    vllm_blocks: int | None = None
    vllm_pool: dict | None = None  # vllm_kv_pool(): groups, block bytes, blocks per request


class PoolOptions(Protocol):
    """The vLLM pool's options as ``harness predict`` and ``harness verify-allocation`` parse them."""

    block_size: int
    max_num_batched_tokens: int
    device: str


def vllm_pool_kwargs(args: PoolOptions) -> dict:
    """The vLLM pool's settings ``predict_allocation`` takes, from the parsed options."""
    return {
        "block_size": args.block_size,
        "in_flight_tokens": args.max_num_batched_tokens,
        "device": args.device,
    }


def predict_allocation(
    model: ModelShape,
    engine: str,
    slots: int,
    ctx_per_slot: int,
    cache_type: str = "f16",
    swa_full: bool = False,
    kv_bytes: int | None = None,
    block_size: int = VLLM_BLOCK,
    in_flight_tokens: int = 2048,
    device: str = "GPU",
    unified: bool = False,
) -> Prediction:
    """What the engine should allocate and print for these settings.

    llama-server: one cache per attention kind, every slot whole at load (one shared stream when
    ``unified``). vLLM: a pool of
    ``kv_bytes`` (default: slots x context) cut into blocks shared by its KV cache groups
    (:func:`~harness.sizing.arithmetic.vllm_kv_pool`); ``ctx_per_slot`` is its max_model_len."""
    per = kv_bytes_per_token(model.layers, model.kv_heads, model.head_dim, cache_type)
    if engine == "llama-server":
        caches = llama_kv_caches(
            model.layers,
            model.kv_heads,
            model.head_dim,
            slots,
            ctx_per_slot,
            cache_type,
            model.swa_layers,
            model.swa_window,
            swa_full=swa_full,
            unified=unified,
        )
        return Prediction(
            per, sum(c["bytes"] for c in caches), [llama_kv_log_line(c, cache_type) for c in caches], caches
        )
    if engine == "vllm":
        pool_bytes = kv_bytes if kv_bytes is not None else per * slots * ctx_per_slot
        pool = vllm_kv_pool(
            model.layers,
            model.kv_heads,
            model.head_dim,
            int(pool_bytes),
            ctx_per_slot,
            block_size,
            cache_type,
            model.swa_layers,
            model.swa_window,
            in_flight_tokens,
        )
        lines = vllm_kv_log_lines(pool["tokens"], ctx_per_slot, pool["max_concurrency"], device)
        return Prediction(per, pool_bytes, lines, [], pool["tokens"], pool["num_blocks"], pool)
    raise ValueError(f"no allocation model for engine {engine!r}; use llama-server or vllm")


# -- a memory fraction, from what vLLM says it had left for the cache ---------------------------------

GIB_ROUNDING = 0.005  # vLLM prints "Available KV cache memory: 7.00 GiB" to two decimals


def fraction_pool(
    model: ModelShape,
    available_gib: float,
    max_model_len: int,
    block_size: int = VLLM_BLOCK,
    cache_type: str = "f16",
    in_flight_tokens: int = 2048,
) -> dict:
    """What a ``--gpu-memory-utilization`` start should have made of the memory it logged as
    available for the KV cache (the serving lab's memory fraction): blocks = available bytes // block bytes,
    tokens and maximum concurrency per :func:`~harness.sizing.arithmetic.vllm_kv_pool`, and the range
    of tokens and concurrency the two-decimal GiB figure allows."""

    def pool(gib: float) -> dict:
        return vllm_kv_pool(
            model.layers,
            model.kv_heads,
            model.head_dim,
            int(gib * GIB),
            max_model_len,
            block_size,
            cache_type,
            model.swa_layers,
            model.swa_window,
            in_flight_tokens,
        )

    exact, low, high = (
        pool(available_gib),
        pool(available_gib - GIB_ROUNDING),
        pool(available_gib + GIB_ROUNDING),
    )
    return {
        **exact,
        "available_bytes": int(available_gib * GIB),
        "tokens_range": [low["tokens"], high["tokens"]],
        "concurrency_range": [low["max_concurrency"], high["max_concurrency"]],
    }


def fraction_check(observed: dict, pool: dict) -> tuple[list[str], list[str]]:
    """(the arithmetic as lines, every disagreement with the log's tokens and concurrency)."""
    lines = [
        f"available {pool['available_bytes']:,} B / {pool['block_bytes']:,} B per block = "
        f"{pool['num_blocks']:,} blocks = {pool['num_blocks'] * pool['block_size']:,} tokens; "
        f"{pool['num_blocks']:,} / {pool['blocks_per_request']} blocks per request = "
        f"{pool['max_concurrency']:.2f}x"
    ]
    problems = []
    tokens, (t_low, t_high) = observed.get("kv_tokens"), pool["tokens_range"]
    if tokens is not None and not t_low <= tokens <= t_high:
        problems.append(
            f"KV pool: log says {tokens:,} tokens but its available memory gives {pool['tokens']:,} "
            f"({t_low:,}-{t_high:,} within the GiB rounding); likely cause: another block size or KV dtype"
        )
    conc, (c_low, c_high) = observed.get("max_concurrency"), pool["concurrency_range"]
    if conc is not None and not round(c_low, 2) - 0.005 <= conc <= round(c_high, 2) + 0.005:
        problems.append(
            f"maximum concurrency: log says {conc:.2f}x but its available memory gives "
            f"{pool['max_concurrency']:.2f}x; likely cause: max_model_len differs"
        )
    return lines, problems


def fraction_change(a: dict, b: dict, total_gib: float) -> dict:
    """The serving lab's reading of two memory-fraction starts: moving from fraction A to B
    changes the KV pool by about (B - A) x the total memory, because the weights and activations do
    not change. ``a`` and ``b`` carry ``fraction`` and ``available_kv_gib`` (the log's "Available KV
    cache memory"); the result has the measured and the predicted change in GiB and their ratio."""
    measured = b["available_kv_gib"] - a["available_kv_gib"]
    predicted = (b["fraction"] - a["fraction"]) * total_gib
    return {
        "measured_gib": measured,
        "predicted_gib": predicted,
        "share": measured / predicted if predicted else None,
    }
