"""The engine's own ``/metrics`` read and judged, level by level (the serving lab's checks on
the engine's queue, slots, cache and memory fraction, and its troubleshooting rows on saturation).
A level record's ``server_metrics`` holds each gauge's mean and max and each counter's change over the level
(``engines/metrics_sampler.py``); this module turns that into what the lab tells the learner to read:

- the peaks of llama.cpp's ``requests_processing`` and ``requests_deferred`` (deferred should stay
  at 0 while the crowd fits the slots) and of vLLM's ``num_requests_running`` and
  ``num_requests_waiting``, with the preemptions counted (``num_preemptions_total``'s rise);
- llama.cpp's batch achieved per decode call during the level (``level_per_decode``): its gauge
  ``n_busy_slots_per_decode`` is llama-server's average over its whole life (busy slots in all /
  decode calls in all since it started), so the level's own figure comes from the first and last
  samples with the decode counter ``n_decode_total``: (g1 x d1 - g0 x d0) / (d1 - d0). Where that
  cannot be taken the figure is absent with its reason, never the lifetime average;
- the engine's cached share from its own counters: llama.cpp's ``prompt_tokens_total`` counts
  prompt tokens processed *excluding* cached ones, so the share is cached / (cached + total); vLLM's
  is prefix-cache hits / queries. It is set beside the client's (cached over prompt tokens);
- a level whose output tokens/s fell below the previous level's by more than the run-to-run noise
  (the spread of its repeats where the levels were repeated, else the lab's "a few per cent"), or
  that shows preemptions, named with the lab's explanation and remedy; a fall within the noise is
  said to be noise, not saturation.

Pure: level records in, numbers, words and (verdict, finding) pairs out."""

from __future__ import annotations

from harness.measure.batch_per_decode import (  # noqa: F401  (re-exported: the sampler and tests read them here)
    BATCH,
    DECODES,
    NO_DECODES,
    OLD_RECORD,
    batch_absent,
    level_per_decode,
)
from harness.lab import remedy
from harness.records.level import LEVEL, MERGED, LevelStats, STATS
from harness.measure.level_checks import VARY

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

PEAKS = (  # (key, metric, words) in the order they are printed
    ("processing", "llamacpp:requests_processing", "processing"),
    ("deferred", "llamacpp:requests_deferred", "deferred"),
    ("running", "vllm:num_requests_running", "running"),
    ("waiting", "vllm:num_requests_waiting", "waiting"),
)
PREEMPTIONS = "vllm:num_preemptions_total"
# What the batch and the pool did: llama.cpp's batch achieved per decode call during the level
# (``level_per_decode``: the batching task's figure) and vLLM's share of the KV pool in use (its peak).
USE = (  # (key, metric, statistic, words)
    ("batch", BATCH, "level", "batch per decode"),
    ("kv_used", "vllm:kv_cache_usage_perc", "max", "KV pool used peak"),
)
IDLE_POOL = 0.5  # a pool under half used while requests wait: admission, not memory, is the limit

SATURATION = (
    "past saturation, where scheduling and cache pressure cost more than batching gains (the serving "
    "lab's troubleshooting row); record it: a falling curve past saturation is a real result"
)
VLLM_CONFIRM = (
    "on vLLM, vllm:num_preemptions_total rising and a Preemptions: field in its stats line confirm it"
)
PREEMPTED = remedy("preempted")
PREEMPT_REMEDY = remedy("preempted_remedy")
DEFERRED = (
    "requests waited for a slot before their prefill began although the crowd fits the slots; "
    + remedy("queued_before_prefill")
)


def _max(sm: dict, metric: str) -> float | None:
    value = (sm.get(metric) or {}).get("max")
    return None if value is None else float(value)


def _delta(sm: dict, metric: str) -> float | None:
    value = (sm.get(metric) or {}).get("delta")
    return None if value is None else float(value)


def peaks(rec: dict) -> dict[str, float]:
    """The level's peaks of the queue gauges the engine exposes, and its preemptions (the counter's
    rise over the level); only what was sampled."""
    sm = rec.get(LEVEL.server_metrics) or {}
    out = {key: v for key, metric, _ in PEAKS if (v := _max(sm, metric)) is not None}
    preempted = _delta(sm, PREEMPTIONS)
    if preempted is not None:
        out["preemptions"] = preempted
    return out


def use(rec: dict) -> dict[str, float]:
    """The level's batch achieved per decode (over the level, ``level_per_decode``) and KV pool used
    (peak, a share), where known; vLLM before 0.10 calls the pool gauge ``gpu_cache_usage_perc``.
    The batch gauge's mean is never taken: it is llama-server's lifetime average (``batch_absent``)."""
    sm = rec.get(LEVEL.server_metrics) or {}
    out = {}
    for key, metric, stat, _ in USE:
        value = (sm.get(metric) or sm.get(metric.replace(":kv_", ":gpu_")) or {}).get(stat)
        if value is not None:
            out[key] = float(value)
    return out


def _use_cells(got: dict[str, float]) -> list[str]:
    return [
        f"{got['batch']:.2f}" if "batch" in got else "—",
        f"{got['kv_used']:.1%}" if "kv_used" in got else "—",
    ]


def admission_text(rec: dict) -> str | None:
    """vLLM running at its cap with requests waiting and the pool mostly idle: the serving lab's
    reading, "admission is the limit, with almost all of the pool idle"; None otherwise."""
    got, cap = {**peaks(rec), **use(rec)}, int(rec.get(LEVEL.server_slots) or 0)
    at_cap = bool(cap) and got.get("running", 0) >= cap and bool(got.get("waiting"))
    if not at_cap or got.get("kv_used", 1.0) >= IDLE_POOL:
        return None
    crowd = rec.get(STATS.concurrency)
    return (
        f"c={crowd}: running at the cap of {cap} with up to {_n(got['waiting'])} waiting "
        f"and {got['kv_used']:.1%} of the KV pool used: admission is the limit, the pool is mostly idle"
    )


def batch_text(rec: dict) -> str | None:
    """llama.cpp's batch achieved per decode call during the level against the crowd (the batching
    task's figure), or why this level has none."""
    got, c = use(rec), rec.get(STATS.concurrency)
    if not c:
        return None
    if "batch" not in got:
        why = batch_absent(rec)
        unknown = "llama-server's batch per decode call for this level unknown"
        return None if why is None else f"c={c}: {unknown}: {why}"
    slots = rec.get(LEVEL.server_slots)
    room = min(c, slots) if slots else c
    batched = f"llama-server batched {got['batch']:.2f} sequences per decode call"
    return f"c={c}: {batched} during the level (of {room})"


def engine_cached_share(rec: dict) -> float | None:
    """The engine's cached share of the prompt tokens it was sent during the level, from its own
    counters; None when it exposes none or was sent nothing."""
    sm = rec.get(LEVEL.server_metrics) or {}
    cached = _delta(sm, "llamacpp:prompt_tokens_cached_total")
    processed = _delta(sm, "llamacpp:prompt_tokens_total")
    if cached is not None and processed is not None:
        total = cached + processed
        return cached / total if total > 0 else None
    hits, queries = _delta(sm, "vllm:prefix_cache_hits_total"), _delta(sm, "vllm:prefix_cache_queries_total")
    if hits is not None and queries:
        return hits / queries
    return None


def client_cached_share(rec: dict) -> float | None:
    """The client's count: mean cached prompt tokens over the mean prompt (None when unknown)."""
    st = LevelStats.read(rec)
    cached, prompt = st.cached_tokens_mean, st.prompt_tokens_mean
    return None if cached is None or not prompt else cached / prompt


def _n(value: float) -> str:
    return f"{value:g}"


def peaks_words(rec: dict) -> str | None:
    """One line of what the engine's /metrics said during the level, or None when it was not sampled."""
    found = peaks(rec)
    parts = [f"{words} peak {_n(found[key])}" for key, _, words in PEAKS if key in found]
    if "preemptions" in found:
        parts.append(f"preemptions {_n(found['preemptions'])}")
    got = use(rec)
    parts += [f"{words} {_use_cells(got)[i]}" for i, (key, _, _, words) in enumerate(USE) if key in got]
    if "batch" not in got and batch_absent(rec):
        parts.append("batch per decode unknown (llama-server's gauge is a lifetime average)")
    engine = engine_cached_share(rec)
    if engine is not None:
        client = client_cached_share(rec)
        beside = "unknown" if client is None else f"{client:.0%}"
        parts.append(f"engine cached {engine:.0%} of the prompt tokens (client {beside})")
    return ", ".join(parts) if parts else None


def _completed(levels: dict[int, dict]) -> list[int]:
    return sorted(
        c for c, r in levels.items() if (st := LevelStats.read(r)).completed and st.output_tokens_per_s
    )


def _flight_words(flight: float | None, c: int | None) -> str | None:
    """In flight near the crowd rules out the client (the lab's answer); well below it, say so."""
    if flight is None or not c:
        return None
    if flight >= 0.9 * c:
        return f"in flight {flight:.1f} of {c}, so the client held the load"
    return f"in flight {flight:.1f} of {c} (the loop ran below the crowd for part of the level)"


def noise(rec: dict, previous: dict) -> tuple[float, str]:
    """The run-to-run noise of output tokens/s at two neighbouring levels, as a share, and where it
    came from: the widest spread (largest - smallest over the median) of either level's repeats
    (``sweep --repeat``) where one was repeated, else the lab's "a few per cent" (``VARY``)."""
    shares = []
    for r in (previous, rec):
        low_high = (r.get(MERGED.spread) or {}).get(STATS.output_tokens_per_s)
        mid = LevelStats.read(r).output_tokens_per_s
        if low_high and mid:
            shares.append((low_high[1] - low_high[0]) / mid)
    if shares:
        return max(shares), "the spread of the repeated runs"
    return VARY, "the lab's few per cent between runs; no repeats measured it"


def _fall(rec: dict, previous: dict) -> tuple[float, float, float] | None:
    """(now, before, share fallen) when this level's output tokens/s is below the previous level's."""
    now = LevelStats.read(rec).output_tokens_per_s or 0.0
    before = LevelStats.read(previous).output_tokens_per_s or 0.0
    if not before or now >= before:
        return None
    return now, before, 1 - now / before


def noise_text(rec: dict, previous: dict) -> str | None:
    """A fall in output tokens/s within the run-to-run noise, said to be noise; None otherwise."""
    fall = _fall(rec, previous)
    if fall is None:
        return None
    share, source = noise(rec, previous)
    if fall[2] > share:
        return None
    c, prev_c = rec.get(STATS.concurrency), previous.get(STATS.concurrency)
    return (
        f"c={c}: {fall[0]:.1f} tok/s, {fall[2]:.1%} below c={prev_c}'s {fall[1]:.1f}, "
        f"within the run-to-run noise of {share:.1%} ({source}): noise, not past saturation"
    )


def drop_text(rec: dict, previous: dict) -> str | None:
    """Why this level's output tokens/s fell below the previous level's, in the lab's words; None
    when it did not fall, or fell no more than the run-to-run noise (``noise_text`` says that)."""
    fall = _fall(rec, previous)
    if fall is None or noise_text(rec, previous):
        return None
    now, before = fall[0], fall[1]
    c, prev_c = rec.get(STATS.concurrency), previous.get(STATS.concurrency)
    found = peaks(rec)
    preempted = found.get("preemptions")
    flight = rec.get(STATS.mean_in_flight)
    parts = [
        f"c={c}: {now:.1f} tok/s, below c={prev_c}'s {before:.1f} ({now / before - 1:+.0%})",
        _flight_words(flight, c),
        SATURATION,
        f"vLLM preempted {_n(preempted)} request(s) at this level" if preempted else None,
        "no preemption counted (vllm:num_preemptions_total did not rise)" if preempted == 0 else None,
        VLLM_CONFIRM if preempted is None and str(rec.get(LEVEL.engine, "")).startswith("vllm") else None,
    ]
    return "; ".join(p for p in parts if p)


def pairs(levels: dict[int, dict]) -> list[tuple[int, int]]:
    """Each completed level with the completed level before it."""
    cs = _completed(levels)
    return list(zip(cs, cs[1:], strict=False))


def noise_notes(levels: dict[int, dict]) -> list[str]:
    """The falls in output tokens/s of a curve that were within the run-to-run noise."""
    return [t for prev, c in pairs(levels) if (t := noise_text(levels[c], levels[prev]))]


def level_findings(label: str, levels: dict[int, dict]) -> list[tuple[str, str]]:
    """(WARN, finding) for each level of a curve whose throughput fell below the previous level's,
    that shows preemptions, or whose requests were deferred while the crowd fitted the slots."""
    found = []
    for prev, c in pairs(levels):
        text = drop_text(levels[c], levels[prev])
        if text:
            found.append(("WARN", f"{label} {text}"))
    for c in sorted(levels):
        got = peaks(levels[c])
        if got.get("preemptions"):
            found.append(
                (
                    "WARN",
                    f"{label} at c={c}: vLLM preempted {_n(got['preemptions'])} request(s): {PREEMPTED}; "
                    f"{PREEMPT_REMEDY}",
                )
            )
        slots = levels[c].get(LEVEL.server_slots)
        if got.get("deferred") and slots and c <= slots:
            found.append(
                (
                    "WARN",
                    f"{label} at c={c}: llama.cpp deferred up to {_n(got['deferred'])} request(s) with "
                    f"{slots} slots: {DEFERRED}",
                )
            )
    return found


def rules(labels: dict[str, dict[int, dict]]) -> list[tuple[str, str]]:
    """The check's rows: a PASS per curve whose /metrics was sampled and shows none of the above,
    else its WARN rows; curves without samples add nothing (the engine exposes no /metrics)."""
    out: list[tuple[str, str]] = []
    for label, levels in labels.items():
        sampled = [
            c for c in sorted(levels) if peaks(levels[c]) or engine_cached_share(levels[c]) is not None
        ]
        found = level_findings(label, levels)
        held = noise_notes(levels)
        rose = "output rose with every level"
        if held:
            rose = f"output rose or held within the noise ({'; '.join(held)})"
        if found:
            out += found
        elif sampled:
            out.append(
                (
                    "PASS",
                    f"{label}: {rose} and the engine's /metrics shows no preemption and no deferral within "
                    "the slots",
                )
            )
        elif held:
            out.append(("PASS", f"{label}: {rose}"))
    return out


def use_notes(levels: dict[int, dict]) -> list[str]:
    """Per level, what the batch and the pool say: llama.cpp's batch achieved, vLLM's admission limit."""
    return [t for c in sorted(levels) for t in (batch_text(levels[c]), admission_text(levels[c])) if t]


def table(levels: dict[int, dict]) -> tuple[list[str], list[list[str]]]:
    """A curve's head and rows for the report, without the columns its engine exposes nothing for
    (llama.cpp has no running/waiting gauges, vLLM no processing/deferred)."""
    rows = table_rows(levels)
    keep = [i for i in range(len(TABLE_HEAD)) if any(row[i] != "—" for row in rows)]
    return [TABLE_HEAD[i] for i in keep], [[row[i] for i in keep] for row in rows]


def table_rows(levels: dict[int, dict]) -> list[list[str]]:
    """A curve's rows for the report: c, each peak, the preemptions, the engine's cached share beside
    the client's; a cell the engine does not expose is ``—``."""
    rows = []
    for c in sorted(levels):
        rec = levels[c]
        got, used = peaks(rec), use(rec)
        engine, client = engine_cached_share(rec), client_cached_share(rec)
        if not got and not used and engine is None and batch_absent(rec) is None:
            continue
        rows.append(
            [
                str(c),
                *[_n(got[key]) if key in got else "—" for key, _, _ in PEAKS],
                _n(got["preemptions"]) if "preemptions" in got else "—",
                *_use_cells(used),
                "—" if engine is None else f"{engine:.1%}",
                "—" if client is None else f"{client:.1%}",
                f"{LevelStats.read(rec).output_tokens_per_s or 0:.1f}",
            ]
        )
    return rows


TABLE_HEAD = [
    "c",
    "processing peak",
    "deferred peak",
    "running peak",
    "waiting peak",
    "preemptions",
    "batch per decode (level)",
    "KV pool used (peak)",
    "engine cached",
    "client cached",
    "out tok/s",
]
