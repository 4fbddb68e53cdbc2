"""The level record, one notebook line per level (docs/architecture.md, "Contracts"): what the
level measured (``LevelStats``, its latencies as ``Distribution``s), who was measured with what
requests and objectives (``LevelContext``, ``ServerInfo``), how the requests arrived (``Arrival``),
which run wrote it (``RunMark``), the client's own check (``ClientCheck``) and, where telemetry
or a price was asked for, its energy and cost (``harness.energy.record_part``). The sweep and the
headless or web-UI Locust run all build it here; what every record shares (schema version, lab
id, objectives, the stamp) is ``harness.records.base``'s.
"""

from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, fields, replace
from datetime import datetime, timezone
from typing import Any, ClassVar, Mapping

from harness.records.base import DEFAULT_OBJECTIVES, LAB_ID, SCHEMA_VERSION, UNKNOWN, Objectives, non_finite
from harness.errors import SchemaError

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


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

    @classmethod
    def read(cls, value: Any) -> Distribution:
        """A distribution as a notebook line holds it; a percentile it lacks (the lab's own lines
        have no p95) reads as None, and so does the whole of one that is absent."""
        if not isinstance(value, Mapping):
            return cls()
        return cls(**{f.name: value.get(f.name) for f in fields(cls)})


class FieldNames:
    """The notebook keys of a record part as attributes: ``STATS.output_tokens_per_s`` is the key
    ``"output_tokens_per_s"``. The part's dataclass is the one place a key is spelled; a reader
    that needs the key itself (a table of columns, a spread) takes it from here, and a misspelt
    one fails where it is used."""

    def __init__(self, part: type) -> None:
        self._names = frozenset(f.name for f in fields(part))

    def __getattr__(self, name: str) -> str:
        if name.startswith("_") or name not in self._names:
            raise AttributeError(f"no record field {name!r}")
        return name


@dataclass(frozen=True)
class LevelStats:
    """What one level measured, from exact samples (``harness.measure.levels.level_stats``)."""

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
    ttft_absent: str | None = None  # added, only when set: why no request had a TTFT (not streamed)

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> LevelStats:
        """The measured part of a level as a notebook line (or a merged level, ``curves.merge_runs``)
        holds it. Old lines stay readable: a field written only since a later version, or never by
        the lab's own load generator, reads as None (a distribution as all None)."""
        values: dict[str, Any] = {
            f.name: Distribution.read(record.get(f.name)) if f.type == "Distribution" else record.get(f.name)
            for f in fields(cls)
        }
        return cls(**values)

    def to_dict(self) -> dict:
        """The measured fields in the notebook's order (distributions as plain objects)."""
        return {
            name: value.to_dict() if isinstance(value, Distribution) else value
            for name, value in self.__dict__.items()
            if not (name in ("decode_note", "ttft_absent") and value is None)
        }


@dataclass(frozen=True)
class ClientCheck:
    """The sweep's view of its own client during a level, and the engine's /metrics if sampled."""

    client_cpu: float | None  # None: the level was too short for a CPU share to mean anything
    client_limited: bool
    server_metrics: dict | None = None
    limit_note: str | None = None  # when limited: which signs, and by how much (levels.client_limit_note)

    def to_dict(self) -> dict:
        out: dict = {}
        if self.client_cpu is not None:
            out.update(client_cpu=round(self.client_cpu, 3), client_limited=self.client_limited)
        if self.limit_note:
            out["client_limit_note"] = self.limit_note
        if self.server_metrics:
            out["server_metrics"] = self.server_metrics
        return out

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> ClientCheck | None:
        """The client check a level line holds, None when it holds none (the lab's own lines)."""
        if not any(
            k in record for k in ("client_cpu", "client_limited", "client_limit_note", "server_metrics")
        ):
            return None
        cpu, limited = record.get("client_cpu"), bool(record.get("client_limited"))
        return cls(cpu, limited, record.get("server_metrics"), record.get("client_limit_note"))


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
    burstiness: float | None = None  # gamma arrivals of this shape (harness.workloads.schedules)
    # added, distributed levels only: each Locust worker's part (harness.load.worker_parts) and which
    # clock timed the level's wall ("samples": one host's, "master": the master's own)
    workers: list[dict] | None = None
    wall_clock: str | None = None

    def to_dict(self) -> dict:
        out: dict = {"arrival": self.kind}
        for name in _ARRIVAL_PARTS:
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> Arrival | None:
        """How a level line says its requests arrived; None on lines that do not say (the lab's)."""
        if "arrival" not in record:
            return None
        return cls(record["arrival"], **{name: record.get(name) for name in _ARRIVAL_PARTS})


_ARRIVAL_PARTS = ("rate_rps", "duration_s", "processes", "burstiness", "workers", "wall_clock")


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

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> RunMark | None:
        """Which run wrote a level line; None on lines from before run ids."""
        if "run_id" not in record:
            return None
        return cls(record["run_id"], record.get("repeat", 1), record.get("repeats", 1))


def run_id_for(when: datetime, pid: int) -> str:
    """A run id: the start time in UTC to the second and the process id (unique on one machine),
    both from the caller (``harness.records.clock.new_run_id``)."""
    return when.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-{pid}"


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
    endpoint: str = "chat"  # the endpoint kind loaded (harness.endpoints)


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
    workload: Any = None  # harness.workloads.level_part.WorkloadStats (docs/workloads.md); read back: _Rest
    energy: dict | None = None  # added: harness.energy.record_part.energy_part (docs/telemetry.md)
    cost: dict | None = None  # added: harness.energy.record_part.cost_part, when a price was given
    machine: dict | None = None  # added: harness.machine's part; the notebook writer adds it when None
    series: dict | None = None  # added: harness.exporter.series.series_part, where /metrics was read

    KIND: ClassVar[str] = "level"  # the record's kind: its schema's name (schemas/level.schema.json)

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
        out.update(model=c.model, base_url=c.base_url)
        if c.endpoint != "chat":  # added only for another kind: a chat run's record is as it always was
            out["endpoint"] = c.endpoint
        out.update(
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
        if self.energy is not None:
            out["energy"] = self.energy
        if self.cost is not None:
            out["cost"] = self.cost
        if self.machine is not None:
            out["machine"] = self.machine
        if self.series is not None:
            out["series"] = self.series
        bad = non_finite(out)
        if bad:  # a figure that cannot be true is never recorded
            raise SchemaError(f"level record for {c.label!r} has {bad}; nothing written")
        return out

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> LevelRecord:
        """A level notebook line as the typed record; ``to_dict`` gives the line back (a field added
        since the line was written comes back empty). It reads the old shapes too: on the lab's own
        lines, which name no engine, model or server, a name that is absent reads as ``unknown`` and
        a number as None. The workload's fields stay as written (``_Rest``): its typed part is built
        from samples, never read back."""
        server = None
        if any(f.name in record for f in fields(ServerInfo)):  # the sweep's lines; the Locust run's lack it
            written: dict[str, Any] = {f.name: record.get(f.name) for f in fields(ServerInfo)}
            server = ServerInfo(**written)
        given: dict[str, Any] = {
            f.name: record.get(f.name, _absent(f))
            for f in fields(LevelContext)
            if f.name not in ("objectives", "server")
        }
        context = LevelContext(**given, objectives=objectives_of(record), server=server)
        typed = cls(
            context=context,
            stats=LevelStats.read(record),
            recorded_at=record.get("recorded_at", ""),
            arrival=Arrival.read(record),
            client=ClientCheck.read(record),
            run=RunMark.read(record),
            energy=record.get("energy"),
            cost=record.get("cost"),
            machine=record.get("machine"),
            series=record.get("series"),
        )
        claimed = typed.to_dict()
        rest = {k: v for k, v in record.items() if k not in claimed}
        return replace(typed, workload=_Rest(rest)) if rest else typed


def objectives_of(record: Mapping[str, Any]) -> Objectives:
    """The goodput objectives a level line was judged against (the defaults on lines without them)."""
    return Objectives(
        record.get("slo_ttft_s", DEFAULT_OBJECTIVES.ttft_s),
        record.get("slo_tpot_s", DEFAULT_OBJECTIVES.tpot_s),
    )


def _absent(part: Field) -> Any:
    """What a context field a line lacks reads as: its default, else ``unknown`` for a name and None
    for a number (the lab's own lines name no engine, model or answer limit)."""
    if part.default is not MISSING:
        return part.default
    return UNKNOWN if part.type == "str" else None


@dataclass(frozen=True)
class _Rest:
    """The fields of a level line that no typed part claims (the workload's), in their order."""

    fields: dict

    def to_dict(self) -> dict:
        return dict(self.fields)


STATS = FieldNames(LevelStats)  # the measured fields' keys (a spread's, a table's columns)
DIST = FieldNames(Distribution)  # a distribution's keys (p50 ... mean)
