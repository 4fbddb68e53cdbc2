"""One level record as llm-d-benchmark's Benchmark Report, version 0.2.1.

The report's schema is vendored in ``schemas/vendor/llm-d-benchmark`` (SOURCE.md names its
commit). Only what the level measured or was told goes in: a figure the record lacks is left
out, as the schema allows, never made up. Our latencies are in seconds; TPOT and ITL per token.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

from harness.records.level import DIST, LEVEL, STATS

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

VERSION = "0.2.1"
SCHEMA_PATH = "vendor/llm-d-benchmark/br_v0_2_1_json_schema.json"  # under harness/schemas
TOOL = "llm-serving-harness"

# Our distribution's keys -> the report's Statistics keys (p95 and p99 are spelled alike).
_STATS = ((DIST.mean, "mean"), (DIST.p50, "p50"), (DIST.p90, "p90"), (DIST.p95, "p95"), (DIST.p99, "p99"))
LATENCIES = (  # (report field, our field, unit)
    ("time_to_first_token", STATS.ttft_s, "s"),
    ("time_per_output_token", STATS.tpot_s, "s/token"),
    ("inter_token_latency", STATS.itl_s, "s/token"),
    ("request_latency", STATS.e2e_s, "s"),
)


def statistics(dist: Any, units: str) -> dict | None:
    """A distribution as the report's Statistics; None without a mean (the schema needs one)."""
    if not isinstance(dist, Mapping) or dist.get(DIST.mean) is None:
        return None
    out = {"units": units}
    out.update({theirs: dist[ours] for ours, theirs in _STATS if dist.get(ours) is not None})
    return out


def single(value: Any, units: str) -> dict | None:
    """One figure as Statistics (its mean); None when the record lacks it."""
    return None if value is None else {"units": units, "mean": value}


def _drop_none(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if v is not None}


def uid(record: Mapping[str, Any]) -> str:
    """The level's report id: label, run id, level (rate or concurrency) and repeat."""
    rate = record.get(LEVEL.rate_rps)
    level = f"rate{rate}" if rate else f"c{record[LEVEL.concurrency]}"
    parts = [str(record.get(LEVEL.label)), str(record.get(LEVEL.run_id) or "no-run-id"), level]
    if (record.get(LEVEL.repeats) or 1) > 1:
        parts.append(f"r{record.get(LEVEL.repeat, 1)}")
    return "/".join(parts)


def report(record: Mapping[str, Any], tool_version: str) -> dict:
    """The Benchmark Report of one level record (``harness.records.base.is_level``)."""
    run = _drop_none(
        {
            "uid": uid(record),
            "eid": record.get(LEVEL.run_id),
            "description": record.get(LEVEL.label),
            "time": {"duration": f"PT{record[STATS.wall_s]}S"},
        }
    )
    scenario = _drop_none({"stack": [_engine(record)], "load": _load(record, tool_version)})
    return {"version": VERSION, "run": run, "scenario": scenario, "results": _results(record)}


def _engine(record: Mapping[str, Any]) -> dict:
    """The server as a generic component: its own fields and the machine part, as recorded."""
    told = {
        k: record.get(k)
        for k in (
            LEVEL.engine_version,
            LEVEL.model,
            LEVEL.quant,
            LEVEL.context_length,
            LEVEL.server_slots,
            LEVEL.base_url,
        )
    }
    standardized = {
        "kind": "generic",
        "tool": str(record.get(LEVEL.engine) or "unknown"),
        "tool_version": str(record.get(LEVEL.engine_version) or "unknown"),
        **_drop_none({k: v for k, v in told.items() if k != LEVEL.engine_version}),
    }
    if isinstance(record.get(LEVEL.machine), dict):
        standardized["machine"] = record[LEVEL.machine]
    cfg = hashlib.sha256(json.dumps(told, sort_keys=True).encode()).hexdigest()[:32]
    meta = {"label": str(record.get(LEVEL.engine) or "server"), "cfg_id": cfg}
    return {"metadata": meta, "standardized": standardized, "native": {}}


_LOAD_ARGS = (
    LEVEL.endpoint,
    LEVEL.prompt_set,
    LEVEL.max_tokens,
    LEVEL.temperature,
    LEVEL.arrival,
    LEVEL.rate_rps,
    LEVEL.duration_s,
    LEVEL.burstiness,
    LEVEL.slo_ttft_s,
    LEVEL.slo_tpot_s,
    LEVEL.repeat,
    LEVEL.repeats,
)


def _load(record: Mapping[str, Any], tool_version: str) -> dict | None:
    """The workload; None when the record has no measured prompt length (the schema needs one)."""
    prompt = record.get(STATS.prompt_tokens_mean)
    if prompt is None:
        return None
    open_loop = record.get(LEVEL.rate_rps) is not None
    standardized = {
        "tool": TOOL,
        "tool_version": tool_version,
        "source": "unknown",  # a named prompt set, not one of the report's random or sampled kinds
        "parallelism": int(record.get(LEVEL.processes) or 1),
        "input_seq_len": {"distribution": "other", "value": prompt},  # the measured mean
        "rate_qps": record[LEVEL.rate_rps] if open_loop else None,
        "concurrency": None if open_loop else record[STATS.concurrency],
    }
    args = {k: record[k] for k in _LOAD_ARGS if record.get(k) is not None}
    return {
        "metadata": {"schema_version": "0.0.1", "description": f"harness level of {record.get(LEVEL.label)}"},
        "standardized": _drop_none(standardized),
        "native": {"args": args},
    }


def _results(record: Mapping[str, Any]) -> dict:
    requests = _drop_none(
        {
            "total": record[STATS.requests],
            "failures": record.get(STATS.failed),
            "incomplete": record.get(STATS.incomplete),
            "input_length": single(record.get(STATS.prompt_tokens_mean), "count"),
            "output_length": statistics(record.get(STATS.output_tokens_dist), "count"),
        }
    )
    latency = _drop_none({theirs: statistics(record.get(ours), unit) for theirs, ours, unit in LATENCIES})
    throughput = _drop_none(
        {
            "output_token_rate": single(record.get(STATS.output_tokens_per_s), "tokens/s"),
            "request_rate": single(record.get(STATS.requests_per_s), "queries/s"),
        }
    )
    aggregate = _drop_none(
        {"requests": requests, "latency": latency or None, "throughput": throughput or None}
    )
    return {"request_performance": {"aggregate": aggregate}}
