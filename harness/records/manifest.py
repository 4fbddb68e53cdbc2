"""The run manifest (``runs/<date>-<name>/manifest.json``) declared field by field: the plan,
each engine started, each step's outcome, the cuts a resume found and the runner of the attempt.
``harness.run.manifest`` keeps it as a document it updates after every step; it builds each part
through these dataclasses, and scripts/schemas.py writes its schema from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.records.base import HEAD, SCHEMA_VERSION
from harness.schema_facts import FieldNames, KeyNames, fact, line

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

CLOSED: dict = {"additionalProperties": False}  # a part that holds only its declared keys


# A command the service launcher ran before the load (an engine entry's ``before_start``).
BEFORE = KeyNames("command", "status")
# The machine the runner ran on (the manifest's ``host``).
HOST = KeyNames("node", "system", "python", "cpus")


@dataclass(frozen=True)
class StepEntry:
    """One step of the plan in the manifest: its status and, once run, how it went."""

    id: str = fact(required=True)
    kind: str = fact(required=True)
    block: str | None = fact(nullable=True, default=None)
    status: str = fact(
        required=True,
        enum=["pending", "running", "passed", "failed", "skipped", "interrupted"],
        default="pending",
    )
    reason: str | None = fact(nullable=True, default=None)
    command: str | None = fact(nullable=True, default=None)
    started: str | None = fact(nullable=True, default=None)
    ended: str | None = fact(nullable=True, default=None)
    duration_s: float | None = fact(nullable=True, minimum=0, default=None)
    attempts: int = fact(minimum=0, default=0)
    log: str | None = fact(nullable=True, default=None)
    result: dict | None = fact(nullable=True, default=None)

    SCHEMA_DEF: ClassVar[str] = "step"  # its name in the schema's $defs
    SCHEMA_FACTS: ClassVar[dict] = CLOSED

    def to_dict(self) -> dict:
        return line(self)


@dataclass(frozen=True)
class Cut:
    """A step an earlier attempt was cut in, as the resume found it."""

    step: str | None = fact("null: cut between two steps", required=True, nullable=True)
    attempt: int = fact(required=True, minimum=0)
    started: str | None = fact(required=True, nullable=True)
    found: str = fact(required=True)

    SCHEMA_FACTS: ClassVar[dict] = CLOSED

    def to_dict(self) -> dict:
        return line(self)


@dataclass(frozen=True)
class RunnerMark:
    """The harness track process of an attempt: its pid and when it started (a pid is reused)."""

    pid: int = fact(required=True, minimum=1)
    since: float = fact("when that process started, seconds since the epoch (a pid is reused)", required=True)

    SCHEMA_FACTS: ClassVar[dict] = CLOSED

    def to_dict(self) -> dict:
        return line(self)


@dataclass(frozen=True)
class MemoryRelease:
    """The hand-over: whether an engine's memory came back after its stop, per reading
    (``harness.engines.handover.judge``)."""

    released: bool | None = fact(required=True, nullable=True)
    held_mb: float | None = fact(nullable=True)
    tolerance_mb: float = fact(required=True)
    readings: list[dict] = fact(
        required=True, items={"type": "object", "required": ["source", "what", "left_mb", "released"]}
    )
    warning: str | None = fact(required=True, nullable=True)

    def to_dict(self) -> dict:
        return line(self)


@dataclass(frozen=True)
class EngineEntry:
    """An engine the run started: how, with which settings, and what it held. Written when its
    block starts and filled in as it comes up and stops."""

    engine: str = fact(required=True)
    command: str = fact(required=True)
    settings: dict = fact()
    changed: dict | None = fact(nullable=True)
    version: str | None = fact(nullable=True, default=None)
    log: str | None = fact(nullable=True, default=None)
    pid: int | None = fact(nullable=True, omit_none=True, default=None)
    host: str | None = fact(default=None)
    port: int | None = fact(default=None)
    memory_mb: float | None = fact(
        "the engine's memory once healthy: its process tree, or its container as docker stats reads it",
        nullable=True,
        omit_none=True,
        default=None,
    )
    memory_mb_at_stop: float | None = fact(
        "the same, read just before stopping it", nullable=True, omit_none=True, default=None
    )
    memory_release: MemoryRelease | None = fact(
        "the hand-over: whether the memory came back after the stop, per reading (the engine's own, "
        "the machine's), within tolerance_mb of the reading before the start (harness/engines/handover.py)",
        default=None,
    )
    service_pid: int | None = fact(
        "service launcher: the process found listening on its port (its memory is read; never "
        "stopped, so not `pid`)",
        nullable=True,
        omit_none=True,
        default=None,
    )
    base_url: str | None = fact(
        "the API base the engine answered at when not the plan's (Lemonade's /api/v1 fallback)", default=None
    )
    before_start: list[dict] | None = fact(
        "service launcher: the serve script's commands run before the load, with their exit status",
        items={
            "type": "object",
            "required": [BEFORE.command, BEFORE.status],
            "properties": {BEFORE.command: {"type": "string"}, BEFORE.status: {"type": "integer"}},
        },
        default=None,
    )
    memory_note: str | None = fact("why this engine's process memory is unknown", default=None)
    running: bool | None = fact(default=None)

    def to_dict(self) -> dict:
        return line(self)


@dataclass(frozen=True)
class RunManifest:
    """What a track run did: the plan it ran, the settings and versions of every engine started,
    and each step's outcome, in the order its file shows them."""

    harness_version: str = fact(default="")
    plan: str = fact(required=True, default="")
    plan_file: str = fact(required=True, default="")
    plan_sha256: str = fact(required=True, pattern="^[0-9a-f]{64}$", default="")
    tier: str | None = fact(nullable=True, default=None)
    variables: dict | None = fact(default=None)
    rehearsal: dict | None = fact(
        "the rehearsal overlay applied (harness track --rehearse): its file, the stand-ins and every "
        "change it made",
        schema={"required": ["overlay", "overlay_sha256", "quick", "stands_for", "stand_ins", "notes"]},
        properties={
            "left_out": {
                "type": "object",
                "description": "the plan's blocks this size left out, each with why",
                "additionalProperties": {"type": "string"},
            }
        },
        default=None,
    )
    run_dir: str = fact(required=True, default="")
    status: str = fact(required=True, enum=["running", "passed", "failed", "interrupted"], default="running")
    started: str = fact(required=True, default="")
    updated: str = fact(required=True, default="")
    host: dict | None = fact(default=None)
    engines: dict[str, EngineEntry] | None = fact(default=None)
    steps: list[StepEntry] = fact(required=True, default_factory=list)
    cuts: list[Cut] | None = fact(
        "Each step an earlier attempt was cut in (the runner gone without a word: a SIGKILL, a crash, "
        "a power loss), as the resume found it.",
        default=None,
    )
    runner: RunnerMark | None = fact(
        "The harness track process of this attempt: while it lives no other may resume the run; once "
        "it is gone, a step still marked running was cut.",
        default=None,
    )

    KIND: ClassVar[str] = "run-manifest"  # the record's kind: its schema's name
    SCHEMA_FACTS: ClassVar[dict] = {
        "title": "What a track run did (runs/<date>-<name>/manifest.json)",
        "description": "The plan, the settings and versions of every engine started, and each step's "
        "outcome. Rewritten after every step, validated before each write.",
        **CLOSED,
    }
    SCHEMA_REQUIRED: ClassVar[tuple] = (HEAD.record, HEAD.harness_schema)
    SCHEMA_KEYS: ClassVar[dict] = {
        HEAD.record: {"const": "run-manifest"},
        HEAD.harness_schema: {"const": SCHEMA_VERSION},
    }

    def to_dict(self) -> dict:
        return {HEAD.record: self.KIND, HEAD.harness_schema: SCHEMA_VERSION, **line(self)}


MANIFEST = FieldNames(RunManifest)  # a manifest's top-level keys
STEP = FieldNames(StepEntry)  # a step entry's keys
ENGINE = FieldNames(EngineEntry)  # an engine entry's keys
CUT = FieldNames(Cut)  # a cut's keys
RUNNER = FieldNames(RunnerMark)  # the runner mark's keys
