"""The levels as rows for a spreadsheet: one header row, the unit in each column's name
(``_s`` seconds, ``_per_s`` per second, ``_bytes``); counts carry no unit. An empty cell is a
figure the level did not record, never a zero."""

from __future__ import annotations

from typing import Any, Mapping

from harness.machine.part import accelerator_names
from harness.records.level import DIST, LEVEL, STATS

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

_RUN = (
    LEVEL.label,
    LEVEL.run_id,
    LEVEL.repeat,
    LEVEL.repeats,
    LEVEL.recorded_at,
    LEVEL.engine,
    LEVEL.engine_version,
    LEVEL.quant,
    LEVEL.model,
)
_LOAD = (
    LEVEL.endpoint,
    LEVEL.prompt_set,
    LEVEL.arrival,
    LEVEL.concurrency,
    LEVEL.rate_rps,
    LEVEL.max_tokens,
    LEVEL.processes,
)
_COUNTS = (STATS.requests, STATS.completed, STATS.failed, STATS.incomplete, STATS.output_tokens)
_RATES = (
    STATS.wall_s,
    STATS.output_tokens_per_s,
    STATS.requests_per_s,
    STATS.goodput_requests_per_s,
    STATS.prompt_tokens_mean,
)
_DISTS = ((STATS.ttft_s, "ttft"), (STATS.tpot_s, "tpot"), (STATS.itl_s, "itl"), (STATS.e2e_s, "e2e"))
_POINTS = (DIST.p50, DIST.p90, DIST.p95, DIST.p99, DIST.mean)
_MACHINE = (
    "machine_cpu_model",
    "machine_cpu_cores",
    "machine_memory_bytes",
    "machine_os",
    "machine_accelerators",
)

COLUMNS = (
    *_RUN,
    *_LOAD,
    *_COUNTS,
    *_RATES,
    *(f"{short}_{point}_s" for _, short in _DISTS for point in _POINTS),
    *_MACHINE,
)


def row(record: Mapping[str, Any]) -> list:
    """One level record's cells, in ``COLUMNS`` order (None where it recorded nothing)."""
    cells: dict[str, Any] = {k: record.get(k) for k in (*_RUN, *_LOAD, *_COUNTS, *_RATES)}
    for ours, short in _DISTS:
        dist = record.get(ours) if isinstance(record.get(ours), Mapping) else {}
        cells.update({f"{short}_{point}_s": dist.get(point) for point in _POINTS})
    cells.update(_machine(record.get(LEVEL.machine)))
    return [cells.get(c) for c in COLUMNS]


def _machine(part: Any) -> dict:
    if not isinstance(part, Mapping):
        return {}
    cpu, os_ = part.get("cpu") or {}, part.get("os") or {}
    names = [name or "?" for name in accelerator_names(part)]
    return {
        "machine_cpu_model": cpu.get("model"),
        "machine_cpu_cores": cpu.get("cores"),
        "machine_memory_bytes": part.get("memory_bytes"),
        "machine_os": " ".join(str(v) for v in (os_.get("name"), os_.get("kernel")) if v) or None,
        "machine_accelerators": "; ".join(names) or None,
    }
