"""The records the harness writes, each built in one place (docs/architecture.md, "Contracts").

This module is the one home of what every record shares: the schema version, the lab ids, the
default goodput objectives and the timestamp format. Each kind of record the package writes has
a frozen dataclass: the level record and its parts in ``harness.records.level``, the sweep's
other kinds here (curve summary, endpoint check, cross-check), the capacity search and the
admission recommendation in ``harness.records.sizing``, the engines lab's in
``harness.records.engine``. Its ``to_dict()`` gives the
exact JSON object that goes on the notebook line, keys in the order the notebook has always had
them, so the sweep, the headless Locust run and the web UI cannot drift apart. Validation against
``schemas/`` stays in ``harness.records.notebook``; the time a record is stamped with comes from its
caller (``harness.records.clock`` reads the clock).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from typing import Any, ClassVar, Mapping

from harness import lab
from harness.schema_facts import FieldNames, KeyNames, fact, line, read_line

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

SCHEMA_VERSION = 1
LAB_ID = lab.SERVING_LAB_ID  # the serving lab's records carry it (the lab profile declares it)
FEATURES_LAB = lab.ENGINES_LAB_ID  # the engines lab's records carry it
DEFAULT_SLO_TTFT_S = lab.threshold("slo_ttft_s")
DEFAULT_SLO_TPOT_S = lab.threshold("slo_tpot_s")
# The keys a line carries besides its part's fields: which lab, which shape and which kind of
# record (a feature probe's ``probe``), and a rehearsal's stamp. Each kind's schema and line take
# them from here.
HEAD = KeyNames("lab", "harness_schema", "record", "probe", "rehearsal", "rehearsal_track", "stand_in")
UNKNOWN = "unknown"  # what a record says of an engine, host or version nobody named
MACHINE_NOTE = (  # what a record's machine part is (the notebook writer adds it, harness.machine)
    "added: the machine the record was written on, read from it (harness.machine); records "
    "written before it lack it"
)
STAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # ISO 8601 in UTC to the second with a Z: every record's stamp
# What a stamp may read as: today's, and the older lines' local time with its offset (+0000) or
# ISO 8601 with +00:00 (strptime's %z takes Z, +0000 and +00:00 alike).
READ_FORMAT = "%Y-%m-%dT%H:%M:%S%z"


def stamp(when: datetime) -> str:
    """``when`` (a time with its zone, from the caller) as the records' one stamp format, in UTC."""
    if when.tzinfo is None:
        raise ValueError(f"a stamp needs a time with its zone, not {when.isoformat()}")
    return when.astimezone(timezone.utc).strftime(STAMP_FORMAT)


def read_stamp(text: str) -> datetime:
    """A record's stamp as a time in UTC, in today's format or either older one (a local time
    with its offset, ``2026-12-01T04:25:10+0100``; ISO 8601 with ``+00:00``)."""
    return datetime.strptime(text, READ_FORMAT).astimezone(timezone.utc)


def is_level(record: Mapping[str, Any]) -> bool:
    """Whether a notebook object is one of this lab's level records (not a curve summary, an
    endpoint check or a cross-check, which share the lab id but not the measured fields)."""
    return record.get("lab") == LAB_ID and "concurrency" in record and "ttft_s" in record


def is_engine_speed(record: Mapping[str, Any]) -> bool:
    """Whether a notebook object is the engines lab's single-user speed test (``short`` or ``long``)."""
    return record.get(HEAD.lab) == FEATURES_LAB and record.get("test") in ("short", "long")


def is_features(record: Mapping[str, Any]) -> bool:
    """Whether a notebook object is the engines lab's feature probe."""
    return record.get(HEAD.lab) == FEATURES_LAB and record.get(HEAD.probe) == "features"


@dataclass(frozen=True)
class Objectives:
    """The goodput objectives a level is judged against: a request is good when both hold."""

    ttft_s: float = DEFAULT_SLO_TTFT_S
    tpot_s: float = DEFAULT_SLO_TPOT_S


DEFAULT_OBJECTIVES = Objectives()


@dataclass(frozen=True)
class CurveRun:
    """Who measured a curve: its first level's engine, version, host, quant, model and server."""

    engine: str | None = fact(nullable=True, default=None)
    engine_version: str | None = fact(nullable=True, default=None)
    host: str | None = fact(nullable=True, default=None)
    quant: str | None = fact(nullable=True, default=None)
    model: str | None = fact(nullable=True, default=None)
    context_length: int | None = fact(nullable=True, default=None)
    server_slots: int | None = fact(nullable=True, default=None)

    @classmethod
    def of(cls, level: Mapping[str, Any]) -> CurveRun:
        """The run context of a curve's first level (its other fields ignored)."""
        return cls(**{f.name: level.get(f.name) for f in fields(cls)})


@dataclass(frozen=True)
class TpotFit:
    """The least-squares fit TPOT p50 = a + b x c, in milliseconds."""

    a: float = fact(required=True)
    b: float = fact(required=True)


# A repeated level's entry in the curve summary's ``spread``: its concurrency and how many runs;
# each headline figure's range sits beside them.
SPREAD = KeyNames("c", "runs")


@dataclass(frozen=True)
class CurveSummary:
    """One label's curve in a line: levels, knee, operating point, fit and capacity."""

    label: str = fact()
    run: CurveRun = fact(flatten="")
    levels: list[int] = fact(required=True, items={"type": "integer", "minimum": 1})
    knee_between: list[int] | None = fact(
        required=True,
        nullable=True,
        oneOf=[
            {"type": "null"},
            {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
        ],
    )
    operating_point: int | None = fact(required=True, nullable=True)
    peak_output_tokens_per_s: float = fact(required=True, minimum=0)
    tpot_fit_ms: TpotFit | None = fact(required=True, nullable=True)
    ceiling_tokens_per_s: float | None = fact(
        "added: 1/b, open-ended (every request admitted at once)", nullable=True
    )
    c_at_slo: float | None = fact("added: where TPOT p50 reaches the objective", nullable=True)
    capacity_within_promise: int | None = fact(
        "added: largest level with p95 TTFT within promise_s", nullable=True
    )
    promise_s: float | None = fact(nullable=True)
    recorded_at: str = fact()
    capacity_reading: str | None = fact(  # written only when known
        "added: exact (the next level up was measured and broke the promise), at least (nothing "
        "measured above it broke it, or the levels between were not measured), none",
        enum=["exact", "at least", "none"],
        default=None,
    )
    spread: list[dict] | None = fact(
        "added: each level run more than once (sweep --repeat): how many runs, and the range "
        "(smallest, largest) of each headline figure over them; the level's own figures are the medians",
        items={
            "type": "object",
            "required": [SPREAD.c, SPREAD.runs],
            "properties": {
                SPREAD.c: {"type": "integer", "minimum": 1},
                SPREAD.runs: {"type": "integer", "minimum": 2},
            },
            "additionalProperties": {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 2,
                "maxItems": 2,
            },
        },
        default=None,
    )
    seat_ceiling_tokens_per_s: float | None = fact(
        "added: seats / (a + b x seats), the ceiling when the seats are known (given or inferred); "
        "written only then",
        exclusiveMinimum=0,
        default=None,
    )
    machine: dict | None = fact(MACHINE_NOTE, schema={"$ref": "machine"}, default=None)

    KIND: ClassVar[str] = "curve-summary"  # the record's kind: its schema's name
    SCHEMA_FACTS: ClassVar[dict] = {"title": "Derived numbers for one label's curve"}
    SCHEMA_REQUIRED: ClassVar[tuple] = (HEAD.lab, HEAD.record, "label")
    SCHEMA_KEYS: ClassVar[dict] = {
        HEAD.harness_schema: {"const": SCHEMA_VERSION},
        HEAD.lab: {"type": "string"},
        HEAD.record: {"const": "curve-summary"},
    }

    def to_dict(self) -> dict:
        return {HEAD.lab: LAB_ID, HEAD.harness_schema: SCHEMA_VERSION, HEAD.record: self.KIND, **line(self)}


def machine_of(level: Mapping[str, Any]) -> dict | None:
    """The machine part of the level a derived record stands on, so a summary written elsewhere
    still names the machine that measured it; None for levels written before the part."""
    return level["machine"] if isinstance(level.get("machine"), dict) else None


@dataclass(frozen=True)
class ProofSeen:
    """What the proof request saw (``harness.endpoints.proof.observe``): the model listing, whether
    the reply streamed text and a finish reason, its usage block and the server's context."""

    listed_models: list[Any] = fact()
    model_listed: bool | None = fact(nullable=True)
    ok: bool = fact(required=True)
    error: str | None = fact(nullable=True)
    finish_reason: str | None = fact(required=True, nullable=True)
    text_fields: list[str] = fact(required=True)
    usage: bool = fact(required=True)
    prompt_tokens: int | None = fact(nullable=True)
    output_tokens: int | None = fact(nullable=True)
    ttft_s: float | None = fact(nullable=True)
    n_ctx: int | None = fact("context per sequence the server reports", required=True, nullable=True)

    @classmethod
    def read(cls, value: Mapping[str, Any]) -> ProofSeen:
        return read_line(cls, value)


SEEN = FieldNames(ProofSeen)  # what the proof request saw: its keys


@dataclass(frozen=True)
class EndpointCheck:
    """What the one request before a sweep's first level saw (``observed``) and what it means."""

    label: str = fact(required=True)
    base_url: str = fact(required=True)
    model: str = fact(required=True)
    observed: ProofSeen = fact(flatten="")
    longest_prompt_tokens_estimate: int = fact()
    checked_at: str = fact(required=True)
    warnings: list[str] = fact(default_factory=list)
    machine: dict | None = fact(MACHINE_NOTE, schema={"$ref": "machine"}, default=None)

    KIND: ClassVar[str] = "endpoint-check"  # the record's kind: its schema's name
    SCHEMA_FACTS: ClassVar[dict] = {"title": "What the endpoint proof saw before a sweep's first level"}
    SCHEMA_REQUIRED: ClassVar[tuple] = (HEAD.harness_schema, HEAD.record)
    SCHEMA_KEYS: ClassVar[dict] = {
        HEAD.harness_schema: {"const": SCHEMA_VERSION},
        HEAD.record: {"const": "endpoint-check"},
        HEAD.lab: {"type": "string"},
    }

    def to_dict(self) -> dict:
        return {HEAD.harness_schema: SCHEMA_VERSION, HEAD.record: self.KIND, HEAD.lab: LAB_ID, **line(self)}

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> EndpointCheck:
        """An endpoint-check line as the typed record."""
        return read_line(cls, record)


@dataclass(frozen=True)
class Figures:
    """One side of a cross-check (ours or the tool's) in the same shape. The builder writes it as a
    dict (each side adds keys of its own: completed, failed, batch); this part declares the
    keys both sides share."""

    output_tokens_per_s: float = fact(required=True, minimum=0)
    tpot_p50_s: float | None = fact(required=True, nullable=True)
    ttft_p50_s: float | None = fact(nullable=True)
    client_cpu: float | None = fact(
        "the client's CPU seconds per wall second while it measured (ours: the level's; the tool's: its "
        "process tree over its benchmark duration; null when unknown)",
        nullable=True,
        minimum=0,
    )

    SCHEMA_DEF: ClassVar[str] = "figures"  # its name in the schema's $defs


FIGURES = FieldNames(Figures)  # a cross-check side's keys
_FIGURES = {"$ref": "#/$defs/figures"}


@dataclass(frozen=True)
class Comparison:
    """Our figures against the tool's (``harness.measure.crosscheck.compare``): the ratios ours /
    theirs, the tolerance, the verdict and the notes that explain it."""

    output_tokens_per_s_ratio: float | None = fact("ours / theirs", required=True, nullable=True)
    tpot_p50_ratio: float | None = fact("ours / theirs", required=True, nullable=True)
    tolerance: float = fact(required=True, minimum=0)
    verdict: str = fact(
        required=True,
        enum=["agree", "client suspect", "differ", "within bound", "above bound", "no figure"],
    )
    notes: list[str] = fact(default_factory=list)

    @classmethod
    def read(cls, value: Mapping[str, Any]) -> Comparison:
        return read_line(cls, value)


@dataclass(frozen=True)
class CrossCheck:
    """Our level against another tool's run of the same load; ``comparison`` is
    ``harness.measure.crosscheck.compare``'s ratios, tolerance, verdict and notes."""

    label: str = fact(required=True)
    concurrency: int = fact(required=True, minimum=1)
    tool: str = fact(required=True, enum=["vllm-bench", "batched-bench"])
    command: str = fact(required=True)
    from_file: bool = fact("the tool's output was read from a saved file")
    prompt_tokens: int = fact(minimum=1)
    max_tokens: int = fact(minimum=1)
    ours: dict = fact(required=True, schema=_FIGURES)
    theirs: dict = fact(required=True, schema=_FIGURES)
    comparison: Comparison = fact(flatten="")
    checked_at: str = fact(required=True)
    machine: dict | None = fact(MACHINE_NOTE, schema={"$ref": "machine"}, default=None)

    KIND: ClassVar[str] = "cross-check"  # the record's kind: its schema's name
    SCHEMA_FACTS: ClassVar[dict] = {
        "title": "Our c-row against the engine's own generator at the same conditions",
        "additionalProperties": False,
    }
    SCHEMA_REQUIRED: ClassVar[tuple] = (HEAD.harness_schema, HEAD.record)
    SCHEMA_KEYS: ClassVar[dict] = {
        HEAD.harness_schema: {"const": SCHEMA_VERSION},
        HEAD.record: {"const": "cross-check"},
        HEAD.lab: {"type": "string"},
    }
    SCHEMA_AFTER: ClassVar[dict] = {  # the rehearsal's stamp (harness.records.notebook.rehearsal_stamp)
        HEAD.rehearsal: {
            "type": "boolean",
            "description": "written by a rehearsal on CPU stand-ins (harness track --rehearse)",
        },
        HEAD.rehearsal_track: {"type": ["string", "null"]},
        HEAD.stand_in: {"type": "string", "description": "what served this record in a rehearsal"},
    }

    def to_dict(self) -> dict:
        return {HEAD.harness_schema: SCHEMA_VERSION, HEAD.record: self.KIND, HEAD.lab: LAB_ID, **line(self)}

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> CrossCheck:
        """A cross-check line as the typed record."""
        return read_line(cls, record)


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
