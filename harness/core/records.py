"""The records the harness writes, each built in one place (docs/architecture.md, "Contracts").

This module is the one home of what every record shares: the schema version, the lab ids, the
default goodput objectives and the timestamp formats. Each kind of record the package writes has
a frozen dataclass, here (the sweep's: level, curve summary, capacity, endpoint check,
cross-check, admission recommendation) or in ``harness.core.engine_records`` (the part-08
lab's), whose ``to_dict()`` gives the exact JSON object that goes on the notebook line, keys in
the order the notebook has always had them, so the sweep, the headless Locust run and the web
UI cannot drift apart. Validation against ``schemas/`` stays in ``harness.io.notebook``; this
module is pure apart from reading the clock in the stamp helpers when no time is given.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping

from harness.errors import SchemaError

SCHEMA_VERSION = 1
LAB_ID = "part-09/lab-serve-twenty-concurrent-users"
FEATURES_LAB = "part-08/lab-same-model-every-engine"
DEFAULT_SLO_TTFT_S = 2.0
DEFAULT_SLO_TPOT_S = 0.1
UNKNOWN = "unknown"  # what a record says of an engine, host or version nobody named
STAMP_FORMAT = "%Y-%m-%dT%H:%M:%S%z"  # local time with its offset: level, curve, allocation, endpoint
UTC_STAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # UTC with a Z: features, engine speed, memory snapshots


def now_stamp(when: float | None = None) -> str:
    """``when`` (seconds since the epoch; now if None) in local time, the level records' format."""
    return time.strftime(STAMP_FORMAT, time.localtime(when))


def utc_stamp(when: float | None = None) -> str:
    """``when`` (now if None) in UTC with a ``Z``, the format of the part-08 lab's records."""
    return time.strftime(UTC_STAMP_FORMAT, time.gmtime(when))


def iso_utc_stamp(when: datetime | None = None) -> str:
    """``when`` (now if None) as ISO 8601 in UTC to the second (``+00:00``): cross-checks, fetches."""
    return (when or datetime.now(timezone.utc)).isoformat(timespec="seconds")


def is_level(record: Mapping[str, Any]) -> bool:
    """Whether a notebook object is one of this lab's level records (not a curve summary, an
    endpoint check or a cross-check, which share the lab id but not the measured fields)."""
    return record.get("lab") == LAB_ID and "concurrency" in record and "ttft_s" in record


def is_engine_speed(record: Mapping[str, Any]) -> bool:
    """Whether a notebook object is a part-08 single-user speed test (``short`` or ``long``)."""
    return record.get("lab") == FEATURES_LAB and record.get("test") in ("short", "long")


def is_features(record: Mapping[str, Any]) -> bool:
    """Whether a notebook object is a part-08 feature probe."""
    return record.get("lab") == FEATURES_LAB and record.get("probe") == "features"


@dataclass(frozen=True)
class Objectives:
    """The goodput objectives a level is judged against: a request is good when both hold."""

    ttft_s: float = DEFAULT_SLO_TTFT_S
    tpot_s: float = DEFAULT_SLO_TPOT_S


DEFAULT_OBJECTIVES = Objectives()


@dataclass(frozen=True)
class Distribution:
    """Nearest-rank percentiles and the mean of one latency, rounded; None where nothing was seen."""

    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    mean: float | None = None

    def to_dict(self) -> dict:
        return {"p50": self.p50, "p90": self.p90, "p95": self.p95, "p99": self.p99, "mean": self.mean}


@dataclass(frozen=True)
class LevelStats:
    """What one level measured, from exact samples (``harness.core.levels.level_stats``)."""

    concurrency: int
    requests: int
    completed: int
    failed: int
    incomplete: int
    cancelled: int
    wall_s: float
    output_tokens: int
    output_tokens_per_s: float
    requests_per_s: float
    goodput_requests_per_s: float
    within_slo: int
    mean_in_flight: float
    ttft_s: Distribution
    tpot_s: Distribution
    itl_s: Distribution
    prompt_tokens_mean: float | None
    cached_tokens_mean: float | None
    token_counts: str | dict
    finish_reasons: dict
    output_tokens_dist: Distribution  # added: output length per request (completion time depends on it)
    first_error: str | None
    arrival_clock: str | None
    client_read_lag_s: Distribution
    client_late_share: float | None
    client_first_late_share: float | None
    client_send_delay_s: Distribution
    e2e_s: Distribution = Distribution()  # added: request sent -> last byte, per completed request
    decode_note: str | None = None  # added, only when set: streams faster than any decode (a flood)

    def to_dict(self) -> dict:
        """The measured fields in the notebook's order (distributions as plain objects)."""
        return {
            name: value.to_dict() if isinstance(value, Distribution) else value
            for name, value in self.__dict__.items()
            if not (name == "decode_note" and value is None)
        }


@dataclass(frozen=True)
class ClientCheck:
    """The sweep's view of its own client during a level, and the engine's /metrics if sampled."""

    client_cpu: float | None  # None: the level was too short for a CPU share to mean anything
    client_limited: bool
    server_metrics: dict | None = None

    def to_dict(self) -> dict:
        out: dict = {}
        if self.client_cpu is not None:
            out.update(client_cpu=round(self.client_cpu, 3), client_limited=self.client_limited)
        if self.server_metrics:
            out["server_metrics"] = self.server_metrics
        return out


@dataclass(frozen=True)
class ServerInfo:
    """What the sweep was told about the server; the headless Locust run knows none of it."""

    engine_version: str
    host: str
    quant: str
    context_length: int | None
    server_slots: int | None


@dataclass(frozen=True)
class Arrival:
    """How requests arrived in a level: ``closed`` (optionally timed or spread over worker
    processes) or an open loop (``fixed-rate`` or ``poisson``) at ``rate_rps``."""

    kind: str = "closed"
    rate_rps: float | None = None
    duration_s: float | None = None
    processes: int | None = None
    burstiness: float | None = None  # gamma arrivals of this shape (harness.core.schedules)

    def to_dict(self) -> dict:
        out: dict = {"arrival": self.kind}
        for name in ("rate_rps", "duration_s", "processes", "burstiness"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


@dataclass(frozen=True)
class RunMark:
    """Which invocation wrote a level (``run_id``, one per sweep or capacity search) and, when a
    level is repeated, which of its ``repeats`` runs this is: so a curve built from several runs,
    or the R runs of one level, can be told apart."""

    run_id: str
    repeat: int = 1
    repeats: int = 1

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "repeat": self.repeat, "repeats": self.repeats}


def new_run_id(when: float | None = None, pid: int | None = None) -> str:
    """A run id: the start time to the second and the process id (unique on one machine)."""
    t = time.time() if when is None else when
    return time.strftime("%Y%m%dT%H%M%S", time.localtime(t)) + f"-{os.getpid() if pid is None else pid}"


@dataclass(frozen=True)
class LevelContext:
    """The run context of a level record: who was measured, with what requests and objectives."""

    label: str
    engine: str
    model: str
    base_url: str
    prompt_set: str
    max_tokens: int
    temperature: float
    objectives: Objectives = DEFAULT_OBJECTIVES
    server: ServerInfo | None = None


@dataclass(frozen=True)
class LevelRecord:
    """One level on the notebook: context, arrival, stamp, then the measured fields. The sweep
    and the headless or web-UI Locust run both write this, so their lines read alike."""

    context: LevelContext
    stats: LevelStats
    recorded_at: str
    arrival: Arrival | None = None
    client: ClientCheck | None = None
    run: RunMark | None = None
    workload: Any = None  # harness.core.workload_stats.WorkloadStats (docs/workloads.md)

    def to_dict(self) -> dict:
        c = self.context
        out: dict = {"lab": LAB_ID, "harness_schema": SCHEMA_VERSION, "label": c.label, "engine": c.engine}
        if c.server is not None:
            out.update(
                engine_version=c.server.engine_version,
                host=c.server.host,
                quant=c.server.quant,
                context_length=c.server.context_length,
                server_slots=c.server.server_slots,
            )
        out.update(
            model=c.model,
            base_url=c.base_url,
            prompt_set=c.prompt_set,
            max_tokens=c.max_tokens,
            temperature=c.temperature,
            slo_ttft_s=c.objectives.ttft_s,
            slo_tpot_s=c.objectives.tpot_s,
        )
        if self.arrival is not None:
            out.update(self.arrival.to_dict())
        out["recorded_at"] = self.recorded_at
        if self.run is not None:
            out.update(self.run.to_dict())
        out.update(self.stats.to_dict())
        if self.client is not None:
            out.update(self.client.to_dict())
        if self.workload is not None:
            out.update(self.workload.to_dict())
        bad = non_finite(out)
        if bad:  # a figure that cannot be true is never recorded
            raise SchemaError(f"level record for {c.label!r} has {bad}; nothing written")
        return out


@dataclass(frozen=True)
class CurveSummary:
    """One label's curve in a line: levels, knee, operating point, fit and capacity."""

    label: str
    run: dict  # engine, engine_version, host, quant, model, context_length, server_slots of its first level
    levels: list[int]
    knee_between: list[int] | None
    operating_point: int | None
    peak_output_tokens_per_s: float
    tpot_fit_ms: dict | None
    ceiling_tokens_per_s: float | None
    c_at_slo: float | None
    capacity_within_promise: int | None
    promise_s: float | None
    recorded_at: str
    capacity_reading: str | None = None  # exact, at least, none (written only when known)
    spread: list[dict] | None = None  # per repeated level: runs and the range of each figure
    seat_ceiling_tokens_per_s: float | None = None  # seats / (a + b x seats), when the seats are known

    RUN_FIELDS = ("engine", "engine_version", "host", "quant", "model", "context_length", "server_slots")

    def to_dict(self) -> dict:
        extra = ("capacity_reading", "spread", "seat_ceiling_tokens_per_s")
        optional = {k: v for k in extra if (v := getattr(self, k)) is not None}
        return {
            "lab": LAB_ID,
            "harness_schema": SCHEMA_VERSION,
            "record": "curve-summary",
            "label": self.label,
            **{k: self.run.get(k) for k in self.RUN_FIELDS},
            **own_fields(self, skip=("label", "run", *extra)),
            **optional,
        }


@dataclass(frozen=True)
class Capacity:
    """What ``harness capacity`` found: the largest load within the promise (``capacity``; None
    when even the first level breaks it), how that reads (``reading``: exact, at least, between or
    none), the criterion and every level it tried, in the order it tried them."""

    label: str
    run: dict  # engine, model, base_url, prompt_set, max_tokens, server_slots of the search
    run_id: str
    criterion: dict  # metric, percentile, limit, text
    confidence: float
    capacity: int | None
    reading: str
    answer: str
    tried: list[dict]  # level, run, figure, pooled, interval, verdict, why
    levels_measured: int
    runs: int
    elapsed_s: float
    time_budget_s: float
    stopped: str  # done, time
    recorded_at: str
    rate_step_rps: float | None = None  # the open-loop search: level k is k x this many requests/s

    RUN_FIELDS = ("engine", "model", "base_url", "prompt_set", "max_tokens", "server_slots")

    def to_dict(self) -> dict:
        return {
            "lab": LAB_ID,
            "harness_schema": SCHEMA_VERSION,
            "record": "capacity",
            "label": self.label,
            "search": "concurrency" if self.rate_step_rps is None else "rate",
            **{k: self.run.get(k) for k in self.RUN_FIELDS},
            **own_fields(self, skip=("label", "run")),
        }


@dataclass(frozen=True)
class EndpointCheck:
    """What the one request before a sweep's first level saw (``observed``) and what it means."""

    label: str
    base_url: str
    model: str
    observed: dict  # harness.io.endpoint_proof.observe: listing, reply fields, usage, n_ctx
    longest_prompt_tokens_estimate: int
    checked_at: str
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "harness_schema": SCHEMA_VERSION,
            "record": "endpoint-check",
            "lab": LAB_ID,
            "label": self.label,
            "base_url": self.base_url,
            "model": self.model,
            **self.observed,
            "longest_prompt_tokens_estimate": self.longest_prompt_tokens_estimate,
            "checked_at": self.checked_at,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class CrossCheck:
    """Our level against another tool's run of the same load; ``comparison`` is
    ``harness.core.crosscheck.compare``'s ratios, tolerance, verdict and notes."""

    label: str
    concurrency: int
    tool: str
    command: str
    from_file: bool
    prompt_tokens: int
    max_tokens: int
    ours: dict
    theirs: dict
    comparison: dict
    checked_at: str

    def to_dict(self) -> dict:
        head = {"harness_schema": SCHEMA_VERSION, "record": "cross-check", "lab": LAB_ID}
        return {
            **head,
            **own_fields(self, skip=("comparison", "checked_at")),
            **self.comparison,
            "checked_at": self.checked_at,
        }


def non_finite(value: Any, where: str = "") -> str | None:
    """The first field holding NaN or an infinity (not JSON, and no figure), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} at {where or '(top level)'}"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = non_finite(item, f"{where}.{key}" if where else str(key))
        if found:
            return found
    return None


def own_fields(record: Any, skip: tuple[str, ...] = ()) -> dict:
    """A dataclass's own fields in declaration order, as a shallow dict (nested dicts shared)."""
    return {name: value for name, value in record.__dict__.items() if name not in skip}


def is_admission(record: Mapping[str, Any]) -> bool:
    """Whether a notebook object is an admission recommendation (``record: admission``)."""
    return record.get("lab") == LAB_ID and record.get("record") == "admission"


@dataclass(frozen=True)
class AdmissionRecommendation:
    """The serving lab's admission recommendation: the level chosen below the unacceptable region
    of the ``source`` curve (its operating point, or the capacity a search found), the first level
    above it that broke the objective, what the admission run (the mixed short/long workload at
    that level, under ``label``) measured there, and the recommendation in words. ``level`` is None
    (and ``why`` says why) when no level qualified; ``harness.core.admission`` builds it."""

    label: str
    source: str
    run: dict  # engine, model, server_slots of the source curve's first level
    method: str  # operating point, capacity search
    objective: dict  # text, limits {"ttft_s.p90": seconds, ...}
    source_levels: list[int]
    level: int | None
    unacceptable_from: int | None
    unacceptable_why: str | None
    confirmed: dict | None  # the admission run at the level: prompt set, counts, percentiles, verdict
    verdict: str  # recommended, not confirmed, unconfirmed, none
    recommendation: str
    why: str
    recorded_at: str

    RUN_FIELDS = ("engine", "model", "server_slots")

    def to_dict(self) -> dict:
        return {
            "lab": LAB_ID,
            "harness_schema": SCHEMA_VERSION,
            "record": "admission",
            "label": self.label,
            "from": self.source,
            **{k: self.run.get(k) for k in self.RUN_FIELDS},
            **own_fields(self, skip=("label", "source", "run")),
        }
