"""The sample line: one request of a level as the samples file beside the notebook holds it
(``<notebook>.samples.jsonl``), so every level record can be worked out again from its samples.
``harness.measure.levels.sample_record`` builds it from a ``Sample``; its schema is written from
``SampleLine`` (scripts/schemas.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from harness.schema_facts import FieldNames, fact, left_out_while_none, read_line

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


@dataclass  # not frozen: a frozen one sets each field through object.__setattr__ (a line per request)
class SampleLine:
    """What the client saw of one request; times in seconds from its departure. The workload's
    tags (conversation, turn, lengths asked for, schedule lateness) ride beside these fields."""

    label: str = fact(required=True, minLength=1)
    concurrency: int = fact(required=True, minimum=1)
    ok: bool = fact(required=True)
    error: str | None = fact(nullable=True)
    ttft_s: float | None = fact(required=True, nullable=True)
    end_s: float | None = fact(required=True, nullable=True)
    token_times_s: list[float] = fact(required=True)
    output_tokens: int | None = fact(required=True, nullable=True, minimum=0)
    token_source: str | None = fact(nullable=True)
    usage_note: str | None = fact(nullable=True)
    cached_note: str | None = fact(nullable=True)
    prompt_tokens: int | None = fact(nullable=True, minimum=0)
    cached_tokens: int | None = fact(nullable=True, minimum=0)
    finish_reason: str | None = fact(nullable=True)
    fields: list[str] = fact(default_factory=list)
    clock: str | None = fact(nullable=True, default=None)
    read_lags_s: list[float] = fact(default_factory=list)
    merged_tokens: int = fact(minimum=0, default=0)
    send_delay_s: float | None = fact(nullable=True, default=None)
    # the departure on the monotonic clock, to line a request up with a server's own log
    departed_monotonic_s: float | None = fact(default=None)
    request_id: str | None = fact(nullable=True, default=None)
    ttft_absent: str | None = fact(default=None)
    run_id: str | None = fact(
        "the sweep, capacity search or Locust run that wrote it: its level record carries the same id",
        minLength=1,
        default=None,
    )
    repeat: int | None = fact(minimum=1, default=None)
    tags: dict = fact(written=False, default_factory=dict)  # the workload's, each its own key

    KIND: ClassVar[str] = "sample"  # the record's kind: its schema's name
    SCHEMA_FACTS: ClassVar[dict] = {
        "title": "One request of a level, a line of the samples file beside the notebook "
        "(<notebook>.samples.jsonl)",
        "description": "Times are seconds from the request's departure. The workload's tags "
        "(conversation, turn, lengths asked for, schedule lateness) ride along as further fields.",
        "additionalProperties": True,
    }

    def to_dict(self) -> dict:
        """The line: each field under its name (one left out while None where it may be absent),
        then the workload's tags. Built from the instance's own dict: a sample line is written per
        request, so it stays a copy, not a walk over the fields."""
        out = dict(self.__dict__)
        del out["tags"]
        for name in _ABSENT_WHILE_NONE:
            if out[name] is None:
                del out[name]
        out.update(self.tags)
        return out

    @classmethod
    def read(cls, row: Mapping[str, Any]) -> SampleLine:
        """A samples file's row as the typed line; the keys no field holds are its tags."""
        typed = read_line(cls, row)
        tags = {k: v for k, v in row.items() if k not in _KEYS}
        return typed if not tags else cls(**{**typed.__dict__, "tags": tags})


_ABSENT_WHILE_NONE = left_out_while_none(SampleLine)
_KEYS = frozenset(f for f in SampleLine.__dataclass_fields__ if f != "tags")
SAMPLE = FieldNames(SampleLine)  # a sample line's keys
