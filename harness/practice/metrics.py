"""The practice server's ``/metrics`` text: llama-server's ``llamacpp:`` families or vLLM's ``vllm:``
families (with the ``model_name`` label), from the engine's counters and queues."""

from __future__ import annotations

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


def metrics_text(mode: str, engine, model_id: str) -> str:
    """The Prometheus text exposition for ``mode`` (``llama`` or ``vllm``)."""
    if mode == "llama":
        return _exposition("llamacpp", "", llama_rows(engine))
    return _exposition("vllm", f'{{model_name="{model_id}"}}', vllm_rows(engine))


def _exposition(prefix: str, label: str, rows: list[tuple]) -> str:
    out = []
    for name, kind, help_text, value in rows:
        out += [
            f"# HELP {prefix}:{name} {help_text}",
            f"# TYPE {prefix}:{name} {kind}",
            f"{prefix}:{name}{label} {value}",
        ]
    return "\n".join(out) + "\n"


def llama_rows(engine) -> list[tuple]:
    """(name, kind, help, value) for each ``llamacpp:`` family, in llama-server's order."""
    e, c = engine, engine.counters
    return [
        *_llama_token_rows(c),
        ("requests_processing", "gauge", "Number of requests processing.", len(e.running)),
        ("requests_deferred", "gauge", "Number of requests deferred.", len(e.waiting)),
    ]


def _llama_token_rows(c) -> list[tuple]:
    per_decode = c.busy_seat_steps / c.decode_steps if c.decode_steps else 0.0
    return [
        (
            "prompt_tokens_total",
            "counter",
            "Number of prompt tokens processed, excluding cached tokens.",
            c.prompt_tokens,
        ),
        (
            "prompt_tokens_cached_total",
            "counter",
            "Number of prompt tokens served from the cache.",
            c.cached_tokens,
        ),
        ("prompt_seconds_total", "counter", "Prompt process time.", c.prompt_seconds),
        (
            "tokens_predicted_total",
            "counter",
            "Number of generation tokens processed.",
            c.generated_tokens,
        ),
        ("tokens_predicted_seconds_total", "counter", "Predict process time.", c.decode_seconds),
        ("n_decode_total", "counter", "Total number of llama_decode() calls.", c.decode_steps),
        (
            "n_busy_slots_per_decode",
            "gauge",
            "Average number of busy slots per llama_decode() call.",
            per_decode,
        ),
        (
            "prompt_tokens_seconds",
            "gauge",
            "Average prompt throughput in tokens/s.",
            c.prompt_tokens / c.prompt_seconds if c.prompt_seconds else 0.0,
        ),
        (
            "predicted_tokens_seconds",
            "gauge",
            "Average generation throughput in tokens/s.",
            c.generated_tokens / c.decode_seconds if c.decode_seconds else 0.0,
        ),
    ]


def vllm_rows(engine) -> list[tuple]:
    """(name, kind, help, value) for each ``vllm:`` family: scheduler state, then token counters."""
    e = engine
    return [
        (
            "num_requests_running",
            "gauge",
            "Number of requests in model execution batches.",
            len(e.running),
        ),
        ("num_requests_waiting", "gauge", "Number of requests waiting to be processed.", len(e.waiting)),
        ("kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", e.kv_usage()),
        *_vllm_counter_rows(e),
    ]


def _vllm_counter_rows(e) -> list[tuple]:
    c, pool = e.counters, getattr(e, "pool", None)
    return [
        (
            "num_preemptions_total",
            "counter",
            "Cumulative number of preemption from the engine.",
            c.preemptions,
        ),
        (
            "prefix_cache_queries_total",
            "counter",
            "Prefix cache queries, in terms of number of queried tokens.",
            pool.queries if pool else 0,
        ),
        (
            "prefix_cache_hits_total",
            "counter",
            "Prefix cache hits, in terms of number of cached tokens.",
            pool.hits if pool else 0,
        ),
        (
            "prompt_tokens_total",
            "counter",
            "Number of prefill tokens processed.",
            c.prompt_tokens + c.cached_tokens,
        ),
        (
            "generation_tokens_total",
            "counter",
            "Number of generation tokens processed.",
            c.generated_tokens,
        ),
        (
            "request_success_total",
            "counter",
            "Count of successfully processed requests.",
            c.requests_finished,
        ),
    ]
