"""The sizing records: what ``harness capacity`` found (``Capacity``) and the serving lab's
admission recommendation (``AdmissionRecommendation``). Each field says its schema facts, and
scripts/schemas.py writes their schemas from them; ``harness.sizing`` builds them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar, Mapping

from harness.records.base import HEAD, LAB_ID, MACHINE_NOTE, SCHEMA_VERSION
from harness.schema_facts import FieldNames, fact, line, read_line

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


@dataclass(frozen=True)
class SearchRun:
    """What the search ran against (None where nobody said)."""

    engine: str | None = fact(nullable=True, default=None)
    model: str | None = fact(nullable=True, default=None)
    base_url: str | None = fact(nullable=True, default=None)
    prompt_set: str | None = fact(nullable=True, default=None)
    max_tokens: int | None = fact(nullable=True, default=None)
    server_slots: int | None = fact(nullable=True, default=None)

    @classmethod
    def of(cls, run: Mapping[str, Any]) -> SearchRun:
        """The run context of a search, from its level context's fields (others ignored)."""
        return cls(**{f.name: run.get(f.name) for f in fields(cls)})


@dataclass(frozen=True)
class SearchCriterion:
    """The promise a search kept: a percentile of a latency, or the goodput share, within a limit."""

    metric: str = fact(required=True, enum=["ttft", "tpot", "itl", "e2e", "goodput"])
    percentile: str = fact(required=True, enum=["p50", "p90", "p95", "p99", ""])
    limit: float = fact("seconds, or a share of requests for goodput", required=True, exclusiveMinimum=0)
    text: str = fact(required=True)


@dataclass(frozen=True)
class TriedRun:
    """One run in a search's path: its level, its own figure, the level's pooled one and verdict."""

    level: int = fact("the crowd, or for the rate search the step k", required=True, minimum=1)
    run: int = fact(required=True, minimum=1)
    figure: float | None = fact("the criterion over this run's requests", required=True, nullable=True)
    pooled: float | None = fact(
        "the criterion over every run of this level so far", required=True, nullable=True
    )
    interval: list[float] | None = fact(
        required=True,
        oneOf=[
            {"type": "null"},
            {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        ],
        nullable=True,
    )
    verdict: str = fact(
        "error: the server failed this run (not a latency verdict); the search ended with it",
        required=True,
        enum=["pass", "fail", "unsure", "error"],
    )
    why: str = fact(required=True)
    rate_rps: float | None = fact(
        "the rate search: the arrival rate of this run", exclusiveMinimum=0, default=None
    )


@dataclass(frozen=True)
class Capacity:
    """What ``harness capacity`` found: the largest load within the promise (``capacity``; None
    when even the first level breaks it), how that reads (``reading``: exact, at least, between or
    none), the criterion and every level it tried, in the order it tried them."""

    label: str = fact(required=True, minLength=1)
    run: SearchRun = fact(flatten="")
    run_id: str = fact("the run id on every level record this search wrote", required=True, minLength=1)
    criterion: SearchCriterion = fact(required=True)
    confidence: float = fact(
        "of the bootstrap interval each verdict is read from",
        required=True,
        exclusiveMinimum=0,
        exclusiveMaximum=1,
    )
    capacity: int | None = fact(
        "people at once, or for the rate search the steps (capacity x rate_step_rps requests/s)",
        required=True,
        nullable=True,
        minimum=1,
    )
    reading: str = fact(required=True, enum=["exact", "at least", "between", "none"])
    answer: str = fact(required=True)
    tried: list[TriedRun] = fact(required=True, minItems=1)
    levels_measured: int = fact(required=True, minimum=1)
    runs: int = fact(required=True, minimum=1)
    elapsed_s: float = fact(required=True, minimum=0)
    time_budget_s: float = fact(required=True, exclusiveMinimum=0)
    # done, time, server (a run the server failed), contradiction (a level's runs disagree)
    stopped: str = fact(required=True, enum=["done", "time", "server", "contradiction"])
    recorded_at: str = fact(required=True)
    rate_step_rps: float | None = fact(
        "the open-loop search: level k is k x this many requests/s (capacity then counts steps)",
        nullable=True,
        exclusiveMinimum=0,
        default=None,
    )
    end_reason: str | None = fact(
        "stopped server or contradiction: why the search ended, in one line", nullable=True, default=None
    )
    machine: dict | None = fact(MACHINE_NOTE, schema={"$ref": "machine"}, default=None)

    KIND: ClassVar[str] = "capacity"  # the record's kind: its schema's name
    SCHEMA_FACTS: ClassVar[dict] = {
        "title": "The largest load within a promise, found by search (harness capacity)",
        "description": "One line per search. Times in seconds. capacity is null when the first level "
        "already breaks the promise, or when no level kept it before the search ended; reading says "
        "whether it is exact (the next level up breaks it), 'at least' (nothing measured above it "
        "broke it) or 'between' (the search stopped before the gap closed). stopped is done, time "
        "(the budget), server (a run the server failed: no request completed, or one failed other "
        "than past its bound; that run is in tried with verdict error and never pooled) or "
        "contradiction (one level's runs gave opposite verdicts); for the last two end_reason says "
        "why and the answer is what was measured before it.",
    }
    SCHEMA_REQUIRED: ClassVar[tuple] = (HEAD.lab, HEAD.record)
    SCHEMA_KEYS: ClassVar[dict] = {  # keys no field holds
        HEAD.harness_schema: {"const": SCHEMA_VERSION},
        HEAD.lab: {"type": "string"},
        HEAD.record: {"const": "capacity"},
        "search": {
            "enum": ["concurrency", "rate"],
            "description": "closed loop over crowds, or open loop over arrival rates",
        },
    }

    def to_dict(self) -> dict:
        head = {HEAD.lab: LAB_ID, HEAD.harness_schema: SCHEMA_VERSION, HEAD.record: self.KIND}
        search = "concurrency" if self.rate_step_rps is None else "rate"
        return {**head, CAPACITY.label: self.label, CAPACITY.search: search, **line(self)}

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> Capacity:
        """A capacity line as the typed record."""
        return read_line(cls, record)


CAPACITY = FieldNames(Capacity)  # a capacity line's keys


@dataclass(frozen=True)
class AdmissionRun:
    """Who measured the source curve: its first level's engine, model and admission limit."""

    engine: str | None = fact(nullable=True, default=None)
    model: str | None = fact(nullable=True, default=None)
    server_slots: int | None = fact(
        "the server's admission limit as configured (slots or max-num-seqs)", nullable=True, default=None
    )

    @classmethod
    def of(cls, level: Mapping[str, Any]) -> AdmissionRun:
        """The run context of the source curve's first level (its other fields ignored)."""
        return cls(**{f.name: level.get(f.name) for f in fields(cls)})


@dataclass(frozen=True)
class Objective:
    """The objective a level is held to: in words, and as limits on level fields."""

    text: str = fact(required=True)
    limits: dict = fact(
        "level field.percentile -> seconds (ttft_s.p90: 2.0)",
        required=True,
        propertyNames={"pattern": "^(ttft|tpot|itl|e2e)_s\\.p(50|90|95|99)$"},
        additionalProperties={"type": "number", "exclusiveMinimum": 0},
    )

    SCHEMA_FACTS: ClassVar[dict] = {"additionalProperties": False}


@dataclass(frozen=True)
class Confirmed:
    """What the admission run measured at the recommended level, and whether it kept the objective."""

    concurrency: int = fact(required=True, minimum=1)
    prompt_set: str | None = fact(required=True, nullable=True)
    completed: int = fact(required=True, minimum=0)
    failed: int = fact(required=True, minimum=0)
    ttft_p90_s: float | None = fact(nullable=True, minimum=0)
    ttft_p95_s: float | None = fact(nullable=True, minimum=0)
    tpot_p90_s: float | None = fact(nullable=True, minimum=0)
    within_objective: bool = fact(required=True)
    broken: str | None = fact("how the admission run broke the objective", required=True, nullable=True)

    SCHEMA_FACTS: ClassVar[dict] = {"additionalProperties": False}


@dataclass(frozen=True)
class AdmissionRecommendation:
    """The serving lab's admission recommendation: the level chosen below the unacceptable region
    of the ``source`` curve (its operating point, or the capacity a search found), the first level
    above it that broke the objective, what the admission run (the mixed short/long workload at
    that level, under ``label``) measured there, and the recommendation in words. ``level`` is None
    (and ``why`` says why) when no level qualified; ``harness.sizing.admission`` builds it."""

    label: str = fact("the admission run's label", required=True, minLength=1)
    source: str = fact("the curve the level was chosen from", key="from", required=True, minLength=1)
    run: AdmissionRun = fact(flatten="")
    method: str = fact(required=True, enum=["operating point", "capacity search"])
    objective: Objective = fact(required=True)
    source_levels: list[int] = fact(required=True, items={"type": "integer", "minimum": 1})
    level: int | None = fact(
        "the recommended admission level: requests at once", required=True, nullable=True, minimum=1
    )
    unacceptable_from: int | None = fact(
        "the first measured level above it that broke the objective; null when none above did",
        required=True,
        nullable=True,
        minimum=1,
    )
    unacceptable_why: str | None = fact(required=True, nullable=True)
    confirmed: Confirmed | None = fact(required=True, nullable=True)
    verdict: str = fact(required=True, enum=["recommended", "not confirmed", "unconfirmed", "none"])
    recommendation: str = fact(required=True, minLength=1)
    why: str = fact(required=True)
    recorded_at: str = fact(required=True)
    machine: dict | None = fact(MACHINE_NOTE, schema={"$ref": "machine"}, default=None)

    KIND: ClassVar[str] = "admission"  # the record's kind: its schema's name
    SCHEMA_FACTS: ClassVar[dict] = {
        "title": "The admission recommendation (the serving lab's last sizing step): the level chosen "
        "below the unacceptable region, and what the mixed short/long workload measured there",
        "description": "One line per admission step, written by the track runner after the step. "
        "Times in seconds. level is null when no level of the source curve qualified (why says so); "
        "verdict is recommended (the admission run kept the objective), not confirmed (it broke it), "
        "unconfirmed (no admission run recorded) or none (no level).",
        "additionalProperties": False,
    }
    SCHEMA_REQUIRED: ClassVar[tuple] = (HEAD.lab, HEAD.record)
    SCHEMA_KEYS: ClassVar[dict] = {
        HEAD.harness_schema: {"const": SCHEMA_VERSION},
        HEAD.lab: {"type": "string"},
        HEAD.record: {"const": "admission"},
    }
    SCHEMA_AFTER: ClassVar[dict] = {  # the rehearsal's stamp (harness.records.notebook.rehearsal_stamp)
        HEAD.rehearsal: {"type": "boolean"},
        HEAD.rehearsal_track: {"type": ["string", "null"]},
        HEAD.stand_in: {"type": "string"},
    }

    def to_dict(self) -> dict:
        head = {HEAD.lab: LAB_ID, HEAD.harness_schema: SCHEMA_VERSION, HEAD.record: self.KIND}
        return {**head, **line(self)}

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> AdmissionRecommendation:
        """An admission line as the typed record."""
        return read_line(cls, record)


ADMISSION = FieldNames(AdmissionRecommendation)  # an admission line's keys
