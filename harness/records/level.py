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

from harness.records.base import (
    DEFAULT_OBJECTIVES,
    HEAD,
    LAB_ID,
    SCHEMA_VERSION,
    UNKNOWN,
    Objectives,
    non_finite,
)
from harness.schema_facts import FieldNames, KeyNames, fact, line_keys
from harness.errors import SchemaError

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


@dataclass(frozen=True)
class Distribution:
    """Nearest-rank percentiles and the mean of one latency, rounded; None where nothing was seen."""

    p50: float | None = fact(required=True, nullable=True, default=None)
    p90: float | None = fact(required=True, nullable=True, default=None)
    p95: float | None = fact("added", nullable=True, default=None)
    p99: float | None = fact(nullable=True, default=None)
    mean: float | None = fact(nullable=True, default=None)

    SCHEMA_DEF: ClassVar[str] = "dist"  # its name in a schema's $defs

    def to_dict(self) -> dict:
        return {"p50": self.p50, "p90": self.p90, "p95": self.p95, "p99": self.p99, "mean": self.mean}

    @classmethod
    def read(cls, value: Any) -> Distribution:
        """A distribution as a notebook line holds it; a percentile it lacks (the lab's own lines
        have no p95) reads as None, and so does the whole of one that is absent."""
        if not isinstance(value, Mapping):
            return cls()
        return cls(**{f.name: value.get(f.name) for f in fields(cls)})


@dataclass(frozen=True)
class LevelStats:
    """What one level measured, from exact samples (``harness.measure.levels.level_stats``)."""

    concurrency: int = fact(required=True, minimum=1)
    requests: int = fact(required=True, minimum=0)
    completed: int = fact(required=True, minimum=0)
    failed: int = fact(required=True, minimum=0)
    incomplete: int = fact("added: streams cut before a finish reason and [DONE]", minimum=0)
    cancelled: int = fact(
        "added: requests unfinished or unsent at the level's bound, counted as failed", minimum=0
    )
    wall_s: float = fact(required=True, minimum=0)
    output_tokens: int = fact(required=True, minimum=0)
    output_tokens_per_s: float = fact(required=True, minimum=0)
    requests_per_s: float = fact(minimum=0)
    goodput_requests_per_s: float = fact(minimum=0)
    within_slo: int = fact(minimum=0)
    mean_in_flight: float = fact(minimum=0)
    ttft_s: Distribution = fact(required=True)
    tpot_s: Distribution = fact(required=True)
    itl_s: Distribution = fact()
    prompt_tokens_mean: float | None = fact(nullable=True)
    cached_tokens_mean: float | None = fact(nullable=True)
    token_counts: str | dict = fact(
        oneOf=[{"type": "string"}, {"type": "object", "additionalProperties": {"type": "integer"}}]
    )
    finish_reasons: dict = fact(additionalProperties={"type": "integer"})
    output_tokens_dist: Distribution = fact(
        "added: output tokens per completed request (p50, p90, p95, p99, mean), the output-length "
        "distribution the serving lab asks to record"
    )
    first_error: str | None = fact(nullable=True)
    arrival_clock: str | None = fact(
        "added: token arrivals timed by the kernel's receive stamps (SO_TIMESTAMPNS), when the client "
        "read them, or both",
        enum=["kernel", "read", "mixed", None],
    )
    client_read_lag_s: Distribution = fact(
        "added: per token, how long its packet waited in the socket before the client read it "
        "(kernel-stamped streams only)"
    )
    client_late_share: float | None = fact(
        "added: share of kernel-stamped tokens read late: more than a median token gap after they "
        "arrived, or in one read with a later token (the kernel merged their packets); their times "
        "are the client's",
        nullable=True,
        minimum=0,
        maximum=1,
    )
    client_first_late_share: float | None = fact(
        "added: share of kernel-stamped first tokens read late (merged with the next token, or read "
        "more than a median gap after arriving): their TTFT is the client's",
        nullable=True,
        minimum=0,
        maximum=1,
    )
    client_send_delay_s: Distribution = fact(
        "added: per request, how long the client took from setting out to send it until just before "
        "it was written to the socket (building it, connecting); the TTFT starts after it"
    )
    e2e_s: Distribution = fact(
        "added: end-to-end latency per completed request, request sent to its last byte",
        default=Distribution(),
    )
    decode_note: str | None = fact(
        "added, only when some completed streams came faster than any engine decodes one stream "
        "(past 20,000 tokens/s: a flood of deltas, a replay, a proxy's buffer): how many, and that "
        "the level's TPOT and throughput are no decode speed",
        minLength=1,
        default=None,
    )
    ttft_absent: str | None = fact(
        "added, only when no completed request had a first token: why (an endpoint kind that does "
        "not stream); ttft_s, tpot_s and itl_s then hold nulls, and e2e_s and the rates stay",
        minLength=1,
        default=None,
    )

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

    # None: the level was too short for a CPU share to mean anything (the key is left out)
    client_cpu: float | None = fact("added: client process CPU seconds per wall second", minimum=0)
    client_limited: bool = fact("added: the client, not the server, looked like the limit")
    server_metrics: dict | None = fact(
        "added: /metrics sampled during the level (gauges mean/max, counters delta)", default=None
    )
    limit_note: str | None = fact(  # levels.client_limit_note
        "added: only when client_limited: which signs were past their bounds and by how much (shares "
        "of tokens and first tokens read late, a full core), and the read lag p99: late tokens' "
        "times are off by up to about that",
        key="client_limit_note",
        default=None,
    )

    def to_dict(self) -> dict:
        out: dict = {}
        if self.client_cpu is not None:
            out.update(client_cpu=round(self.client_cpu, 3), client_limited=self.client_limited)
        if self.limit_note:
            out[_CLIENT.client_limit_note] = self.limit_note
        if self.server_metrics:
            out[_CLIENT.server_metrics] = self.server_metrics
        return out

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> ClientCheck | None:
        """The client check a level line holds, None when it holds none (the lab's own lines)."""
        if not any(k in record for k in line_keys(cls)):
            return None
        cpu, limited = record.get(_CLIENT.client_cpu), bool(record.get(_CLIENT.client_limited))
        return cls(cpu, limited, record.get(_CLIENT.server_metrics), record.get(_CLIENT.client_limit_note))


@dataclass(frozen=True)
class ServerInfo:
    """What the sweep was told about the server; the headless Locust run knows none of it."""

    engine_version: str = fact()
    host: str = fact()
    quant: str = fact()
    context_length: int | None = fact(nullable=True, minimum=0)
    server_slots: int | None = fact(nullable=True, minimum=0)


# The level record's ``workers`` (``Arrival.workers``): one entry per Locust worker, each made by
# ``harness.load.worker_parts.WorkerPart.entry``. ``WORKER`` holds its keys for every reader.
WORKERS_SCHEMA: dict = {
    "type": "array",
    "items": {
        "type": "object",
        "required": [
            "worker",
            "users",
            "requests",
            "returned",
            "completed",
            "cpu_percent",
            "late_share",
            "ttft_p50_s",
            "limited",
        ],
        "properties": {
            "worker": {
                "type": "string",
                "description": "its name (harness worker --name; default host:pid; local ones process-N)",
            },
            "users": {"type": "integer", "minimum": 0},
            "requests": {"type": "integer", "minimum": 0, "description": "its share of the level's requests"},
            "returned": {
                "type": "integer",
                "minimum": 0,
                "description": "exact samples it sent back to the master",
            },
            "completed": {"type": "integer", "minimum": 0},
            "cpu_percent": {
                "type": ["number", "null"],
                "minimum": 0,
                "description": (
                    "its process's CPU (per cent of one core) as its heartbeats said, mean over the level"
                ),
            },
            "late_share": {
                "type": ["number", "null"],
                "minimum": 0,
                "maximum": 1,
                "description": "its share of tokens read a whole token gap late",
            },
            "ttft_p50_s": {"type": ["number", "null"], "minimum": 0},
            "limited": {
                "type": "boolean",
                "description": (
                    "it could not keep up: CPU past 90 % or more than 0.25 % of its tokens read late"
                ),
            },
            "lost": {
                "type": "string",
                "description": (
                    "only for a worker lost mid-level: why; the requests of its share that "
                    "never came back are failed samples (WorkerLost)"
                ),
            },
        },
    },
}
WORKER = KeyNames(*WORKERS_SCHEMA["items"]["properties"])


@dataclass(frozen=True)
class Arrival:
    """How requests arrived in a level: ``closed`` (optionally timed or spread over worker
    processes) or an open loop (``fixed-rate`` or ``poisson``) at ``rate_rps``."""

    kind: str = fact(
        "added: closed (the lab's method), fixed-rate, poisson or gamma (open loop, gamma with "
        "burstiness), or trace (replayed at its timestamps; open loop); for an open loop concurrency "
        "holds the peak in flight",
        key="arrival",
        enum=["closed", "fixed-rate", "poisson", "gamma", "trace"],
        default="closed",
    )
    rate_rps: float | None = fact(
        "added: offered arrival rate, requests per second (open loop)", exclusiveMinimum=0, default=None
    )
    duration_s: float | None = fact(
        "added: time-bounded level: seconds of sending before the drain", exclusiveMinimum=0, default=None
    )
    processes: int | None = fact("added: Locust worker processes that made the load", minimum=1, default=None)
    burstiness: float | None = fact(  # harness.workloads.schedules
        "added: open loop with gamma inter-arrival gaps of this shape K (1 is Poisson, below 1 "
        "burstier; the vllm bench serve and AIPerf definition)",
        exclusiveMinimum=0,
        default=None,
    )
    workers: list[dict] | None = fact(
        "added, distributed levels: each Locust worker's part (harness.load.worker_parts); the "
        "level's percentiles are over every worker's samples pooled, never averaged across workers",
        declared_in="harness.records.level.WORKERS_SCHEMA",
        default=None,
    )
    wall_clock: str | None = fact(
        "added, distributed levels: what timed wall_s; samples: the first send to the last end, every "
        "worker on the master's host and its monotonic clock; master: the master's own clock from "
        "handing out the shares to the last sample's arrival (workers on other hosts: no two hosts' "
        "clocks are subtracted)",
        enum=["samples", "master"],
        default=None,
    )

    def to_dict(self) -> dict:
        out: dict = {_ARRIVAL.arrival: self.kind}
        for name in _ARRIVAL_PARTS:
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> Arrival | None:
        """How a level line says its requests arrived; None on lines that do not say (the lab's)."""
        if _ARRIVAL.arrival not in record:
            return None
        return cls(record[_ARRIVAL.arrival], **{name: record.get(name) for name in _ARRIVAL_PARTS})


_CLIENT = FieldNames(ClientCheck)
_ARRIVAL = FieldNames(Arrival)
_ARRIVAL_PARTS = tuple(line_keys(Arrival))[1:]  # each the name of its field: rate_rps ... wall_clock


@dataclass(frozen=True)
class RunMark:
    """Which invocation wrote a level (``run_id``, one per sweep or capacity search) and, when a
    level is repeated, which of its ``repeats`` runs this is: so a curve built from several runs,
    or the R runs of one level, can be told apart."""

    run_id: str = fact(
        "added: the sweep or capacity search that wrote this level (one id per invocation)", minLength=1
    )
    repeat: int = fact("added: which run of this level this is (1 to repeats)", minimum=1, default=1)
    repeats: int = fact(
        "added: how many runs of this level the invocation asked for (--repeat)", minimum=1, default=1
    )

    def to_dict(self) -> dict:
        return {_RUN.run_id: self.run_id, _RUN.repeat: self.repeat, _RUN.repeats: self.repeats}

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> RunMark | None:
        """Which run wrote a level line; None on lines from before run ids."""
        if _RUN.run_id not in record:
            return None
        return cls(record[_RUN.run_id], record.get(_RUN.repeat, 1), record.get(_RUN.repeats, 1))


_RUN = FieldNames(RunMark)
# What a level merged from its repeated runs carries besides a level line's keys
# (``harness.measure.curves.merge_runs``): how many runs, and each headline figure's range.
MERGED = KeyNames("runs", "spread")


def run_id_for(when: datetime, pid: int) -> str:
    """A run id: the start time in UTC to the second and the process id (unique on one machine),
    both from the caller (``harness.records.clock.new_run_id``)."""
    return when.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-{pid}"


@dataclass(frozen=True)
class LevelContext:
    """The run context of a level record: who was measured, with what requests and objectives."""

    label: str = fact(required=True, minLength=1)
    engine: str = fact()
    model: str = fact()
    base_url: str = fact()
    prompt_set: str = fact()
    max_tokens: int = fact(minimum=1)
    temperature: float = fact()
    objectives: Objectives = fact(flatten="slo_", default=DEFAULT_OBJECTIVES)
    server: ServerInfo | None = fact(flatten="", default=None)
    endpoint: str = fact(  # the endpoint kind loaded (harness.endpoints)
        "added, only for a kind other than chat: the endpoint kind loaded (harness.endpoints); absent: "
        "chat, streamed chat completions (every record written before there were kinds)",
        minLength=1,
        default="chat",
    )


@dataclass(frozen=True)
class LevelRecord:
    """One level on the notebook: context, arrival, stamp, then the measured fields. The sweep
    and the headless or web-UI Locust run both write this, so their lines read alike."""

    context: LevelContext = fact(flatten="")
    stats: LevelStats = fact(flatten="")
    recorded_at: str = fact()
    arrival: Arrival | None = fact(flatten="", default=None)
    client: ClientCheck | None = fact(flatten="", default=None)
    run: RunMark | None = fact(flatten="", default=None)
    # docs/workloads.md; read back, the fields no other part claims (_Rest)
    workload: Any = fact(flatten="", declared_in="harness.workloads.level_part.WorkloadStats", default=None)
    energy: dict | None = fact(declared_in="harness.energy.record_part.ENERGY_SCHEMA", default=None)
    cost: dict | None = fact(declared_in="harness.energy.record_part.COST_SCHEMA", default=None)
    machine: dict | None = fact(  # the notebook writer adds it when None
        "added: the machine the record was written on, read from it (harness.machine); records "
        "written before it lack it",
        schema={"$ref": "machine"},
        default=None,
    )
    series: dict | None = fact(declared_in="harness.exporter.series.SERIES_SCHEMA", default=None)

    KIND: ClassVar[str] = "level"  # the record's kind: its schema's name (schemas/level.schema.json)
    SCHEMA_FACTS: ClassVar[dict] = {
        "title": "One concurrency level of a load sweep",
        "description": "One notebook line per level, in the lab load generator's field names (records "
        "written by the lab's own load-test.py validate too). Times in seconds; rates per second of "
        "wall clock. Fields marked 'added' are written by this harness only.",
    }
    SCHEMA_REQUIRED: ClassVar[tuple] = (HEAD.lab,)
    SCHEMA_KEYS: ClassVar[dict] = {  # keys no field holds: what every level line carries
        HEAD.lab: {"type": "string"},
        HEAD.harness_schema: {
            "const": SCHEMA_VERSION,
            "description": "added: present on records this harness wrote",
        },
    }

    def to_dict(self) -> dict:
        c = self.context
        out: dict = {
            HEAD.lab: LAB_ID,
            HEAD.harness_schema: SCHEMA_VERSION,
            "label": c.label,
            "engine": c.engine,
        }
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
            out[LEVEL.energy] = self.energy
        if self.cost is not None:
            out[LEVEL.cost] = self.cost
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
            energy=record.get(LEVEL.energy),
            cost=record.get(LEVEL.cost),
            machine=record.get("machine"),
            series=record.get("series"),
        )
        claimed = typed.to_dict()
        rest = {k: v for k, v in record.items() if k not in claimed}
        return replace(typed, workload=_Rest(rest)) if rest else typed


def objectives_of(record: Mapping[str, Any]) -> Objectives:
    """The goodput objectives a level line was judged against (the defaults on lines without them)."""
    return Objectives(
        record.get(LEVEL.slo_ttft_s, DEFAULT_OBJECTIVES.ttft_s),
        record.get(LEVEL.slo_tpot_s, DEFAULT_OBJECTIVES.tpot_s),
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
LEVEL = FieldNames(LevelRecord)  # every key of a level line but the workload's (WORKLOAD in level_part)
DIST = FieldNames(Distribution)  # a distribution's keys (p50 ... mean)
