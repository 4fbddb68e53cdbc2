"""What a level's record adds for a workload beyond the labs' prompt sets, from its exact samples
(pure): the workload and its parameters, the lengths asked for and the ones sent and received,
the open loop's schedule error (``schedule_lateness_s``) and the departures' spread, and the
per-turn table of a conversation workload (TTFT, TPOT and cached share by turn index).

The cached share of a turn is its completed requests' cached prompt tokens over their prompt
tokens (``usage.prompt_tokens_details.cached_tokens``, else llama.cpp's ``timings.cache_n``);
None where no request said how many of its tokens were cached.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Mapping

from harness.measure.backlog import Backlog, Flight, backlog, server_note
from harness.measure.levels import spread as _spread
from harness.records.level import Distribution
from harness.schema_facts import FieldNames, fact
from harness.workloads.schedules import coefficient_of_variation, gaps
from harness.measure.sample import Sample
from harness.measure.tally import LevelTally

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


def cached_share(samples: list[Sample]) -> float | None:
    """Cached prompt tokens over prompt tokens of the samples that reported both; None if none did."""
    told = [s for s in samples if s.prompt_tokens and s.cached_tokens is not None]
    if not told:
        return None
    return round(sum(s.cached_tokens or 0 for s in told) / sum(s.prompt_tokens or 0 for s in told), 4)


KINDS = ("prompts", "conversations", "agent", "trace")  # the workload kinds a level record names
# The workload's parameters as the record's ``workload`` holds them beside its kind.
PARAMS_SCHEMA: dict = {
    "conversation_file": {"type": "string"},
    "file_conversations": {"type": "integer", "minimum": 1},
    "input_tokens": {"type": "string"},
    "output_tokens": {"type": "string"},
    "turns": {"type": "string"},
    "message_tokens": {"type": "string"},
    "think_s": {"type": "number", "minimum": 0},
    "trace": {"type": "string"},
    "trace_format": {"type": "string"},
    "time_scale": {"type": "number", "exclusiveMinimum": 0},
    "requests": {"type": "integer", "minimum": 1},
    "block_tokens": {"type": "integer", "minimum": 1},
    "span_s": {
        "type": "number",
        "minimum": 0,
        "description": "trace replay: seconds from its first request to its last, as replayed",
    },
}


@dataclass(frozen=True)
class TurnRow:
    """One turn index of a conversation workload."""

    turn: int = fact(required=True, minimum=1)
    requests: int = fact(required=True, minimum=0)
    completed: int = fact(required=True, minimum=0)
    ttft_s: Distribution = fact(required=True)
    tpot_s: Distribution = fact(required=True)
    prompt_tokens_mean: float | None = fact(nullable=True)
    cached_share: float | None = fact(
        "cached prompt tokens over prompt tokens of the turn's completed requests",
        required=True,
        nullable=True,
        minimum=0,
        maximum=1,
    )

    @classmethod
    def read(cls, row: Mapping[str, Any]) -> TurnRow:
        """A per_turn row as a level line holds it (a figure it lacks reads as None)."""
        values: dict[str, Any] = {
            f.name: Distribution.read(row.get(f.name)) if f.type == "Distribution" else row.get(f.name)
            for f in fields(cls)
        }
        return cls(**values)

    def to_dict(self) -> dict:
        return {
            f.name: value.to_dict() if isinstance(value := getattr(self, f.name), Distribution) else value
            for f in fields(self)
        }


def per_turn(samples: list[Sample]) -> list[TurnRow]:
    """One row per turn index that any sample carries, in turn order ([] for other workloads)."""
    by_turn: dict[int, list[Sample]] = defaultdict(list)
    for s in samples:
        turn = s.tags.get("turn")
        if isinstance(turn, int):
            by_turn[turn].append(s)
    rows = []
    for turn in sorted(by_turn):
        ok = [s for s in by_turn[turn] if s.ok]
        prompts = [s.prompt_tokens for s in ok if s.prompt_tokens is not None]
        rows.append(
            TurnRow(
                turn=turn,
                requests=len(by_turn[turn]),
                completed=len(ok),
                ttft_s=_spread([s.ttft for s in ok if s.ttft is not None], 4),
                tpot_s=_spread([s.tpot for s in ok if s.tpot is not None], 5),
                prompt_tokens_mean=round(sum(prompts) / len(prompts), 1) if prompts else None,
                cached_share=cached_share(ok),
            )
        )
    return rows


@dataclass(frozen=True)
class WorkloadStats:
    """The workload fields of a level record (``workload_stats``)."""

    kind: str = fact(  # prompts, conversations, agent or trace, with its parameters (``params``)
        "added: the workload and its parameters as given (length specs, turns, think time, trace "
        "file); absent on the labs' prompt sets",
        key="workload",
        type="object",
        schema={"required": ["kind"], "properties": {"kind": {"enum": list(KINDS)}, **PARAMS_SCHEMA}},
    )
    params: dict = fact(written=False)  # its parameters as given: in ``workload`` beside its kind
    input_tokens_asked: Distribution | None = fact(
        "added: prompt tokens the workload asked for per request (its input length distribution as drawn)"
    )
    output_tokens_asked: Distribution | None = fact(
        "added: output tokens the workload asked for per request (forced with max_tokens, min_tokens "
        "and ignore_eos)"
    )
    input_tokens_sent: Distribution = fact(
        "added: prompt tokens per completed request as the server counted them (usage.prompt_tokens): "
        "what was actually sent",
        key="input_tokens_dist",
    )
    schedule_lateness_s: Distribution | None = fact(
        "added: open loop and trace replay: per request, its departure minus its scheduled time (the "
        "client's own schedule error), seconds"
    )
    departure_gap_cv: float | None = fact(
        "added: open loop: coefficient of variation of the gaps between departures (1 for Poisson, "
        "1/sqrt(K) at burstiness K)",
        minimum=0,
    )
    turns: list[TurnRow] = fact(
        "added: conversation workloads: one row per turn index (1 is the first)", key="per_turn"
    )
    conversations: int | None = fact("added: conversations the level's requests belonged to", minimum=1)
    tool_call_turns: int | None = fact(
        "added: agent loop: completed turns whose answer called a tool (each answered by a tool "
        "result in the next turn)",
        minimum=0,
        default=None,
    )
    answers_without_text: dict | None = fact(
        "added: conversation workloads: answers that carried no text, by kind (failed, "
        "reasoning-only, empty); each is a turn of its own all the same",
        additionalProperties={"type": "integer", "minimum": 1},
        default=None,
    )
    ended_early: int = fact(  # history, tool calls, --turns, a context refusal
        "added: conversation workloads: conversations a bound ended before their turns did (an answer "
        "past what a sample keeps, a history past its bound, too many tool calls, a tool still asked "
        "for at the last turn); workload_note says the first",
        key="conversations_ended_early",
        minimum=1,
        default=0,
    )
    turns_not_sent: int = fact(
        "added: conversation workloads: turns never sent because the server refused an earlier turn "
        "of their conversation for its context (a 400 naming it); that conversation ended there, each "
        "later turn would only have sent a longer history; workload_note says the first refusal",
        minimum=1,
        default=0,
    )
    tool_call_failures: int = fact(
        "added: agent loop: tool calls that could not be run: an unknown function or arguments that "
        "are no JSON object (each answered by an error result), or an answer making more calls than "
        "one may (counted once; its conversation ends); workload_note says the first",
        minimum=1,
        default=0,
    )
    notes: tuple[str, ...] = fact(  # the first reason of each of those, joined
        "added: what the workload could not do on this engine (an agent loop on an engine that calls "
        "no tool runs as plain turns)",
        key="workload_note",
        type="string",
        default=(),
    )
    schedule_note: str | None = fact(
        "added: open loop and trace replay, only when it happened: the client could not send at the "
        "schedule's pace (the p99 of its departures' lateness past 10 ms and past the mean gap it "
        "kept); the load offered was less than asked, and client_limited is true",
        default=None,
    )
    cached_note: str | None = fact(
        "added, only when it happened: requests whose cached count passed their prompt's tokens, from "
        "which no cached count was taken (so no cached share passes 1)",
        default=None,
    )
    backlog: Backlog | None = fact(
        "added: open loop and trace replay: arrivals against the server's finishes over the window "
        "from one early request's time in the server (the longest of the first quarter's) after the "
        "first departure to the last departure (harness.measure.backlog)",
        default=None,
    )
    # the level's client check found the client the limit (it wins); the line says so elsewhere
    client_limited: bool = fact(written=False, default=False)

    SCHEMA_AFTER: ClassVar[dict] = {  # the verdicts computed from the fields
        "server_limited": {
            "type": "boolean",
            "description": "added: open loop and trace replay: the server did not keep up with the "
            "arrivals (over the window after the first requests had time to finish, at most 80 % of "
            "the arrivals finished and the number in flight rose by 3 or more) while the client kept "
            "its schedule; false when the client was the limit (client_limited wins) or the level was "
            "too short to tell (backlog.reason)",
        },
        "server_note": {
            "type": "string",
            "description": "added, only when the server fell behind: server-limited with its figures "
            "(rates offered and finished, the rise in flight, the peak), or that the server fell "
            "behind too but the level is client-limited",
        },
    }

    @property
    def server_limited(self) -> bool:
        """The server could not keep up with the arrivals and the client kept its schedule (the
        client-limited verdict wins when both apply)."""
        return bool(self.backlog and self.backlog.server_limited and not self._client_late)

    @property
    def _client_late(self) -> bool:
        return bool(self.schedule_note) or self.client_limited

    def to_dict(self) -> dict:
        out: dict = {"workload": {"kind": self.kind, **self.params}}
        for name in ("input_tokens_asked", "output_tokens_asked", "schedule_lateness_s"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value.to_dict()
        out["input_tokens_dist"] = self.input_tokens_sent.to_dict()
        if self.departure_gap_cv is not None:
            out["departure_gap_cv"] = round(self.departure_gap_cv, 4)
        if self.turns:
            out["per_turn"] = [row.to_dict() for row in self.turns]
        if self.conversations is not None:
            out["conversations"] = self.conversations
        notes = list(self.notes)
        if self.tool_call_turns is not None:
            out["tool_call_turns"] = self.tool_call_turns
            if self.tool_call_turns == 0 and self.turns:
                notes.insert(0, "the engine called no tool: the agent loop ran as plain turns")
        out.update(
            (key, value)
            for key, value in (
                ("answers_without_text", self.answers_without_text),
                ("conversations_ended_early", self.ended_early),
                ("turns_not_sent", self.turns_not_sent),
                ("tool_call_failures", self.tool_call_failures),
                ("workload_note", "; ".join(notes)),
                ("schedule_note", self.schedule_note),
                ("cached_note", self.cached_note),
            )
            if value  # each only when it happened
        )
        if self.backlog is not None:
            out["backlog"] = self.backlog.to_dict()
            out["server_limited"] = self.server_limited
            note = server_note(self.backlog, self._client_late)
            if note:
                out["server_note"] = note
        return out


WORKLOAD = FieldNames(WorkloadStats)  # the workload's keys on a level line (per_turn, backlog, ...)
TURN = FieldNames(TurnRow)  # a per_turn row's keys


def _tagged(samples: list[Sample], name: str, digits: int) -> Distribution | None:
    values = [float(s.tags[name]) for s in samples if isinstance(s.tags.get(name), (int, float))]
    return _spread(values, digits) if values else None


def _conversation_notes(samples: list[Sample]) -> dict:
    """What the conversations' bounds and odd answers did, from the samples' tags
    (``harness.workloads.conversations``): kinds of answers without text, conversations ended early,
    the turns a context refusal left unsent, tool calls that failed, and one sentence for the
    conversations ended and one for the tool calls."""
    kinds: dict[str, int] = {}
    for s in samples:
        if isinstance(s.tags.get("answer"), str):
            kinds[s.tags["answer"]] = kinds.get(s.tags["answer"], 0) + 1
    ended = [s.tags["end_note"] for s in samples if isinstance(s.tags.get("end_note"), str)]
    errors = [e for s in samples for e in s.tags.get("tool_errors") or [] if isinstance(e, str)]
    failures = sum(s.tags["tool_failures"] for s in samples if isinstance(s.tags.get("tool_failures"), int))
    unsent = sum(s.tags["turns_not_sent"] for s in samples if isinstance(s.tags.get("turns_not_sent"), int))
    notes = []
    if ended:
        notes.append(f"{len(ended)} conversation(s) ended early, the first as {ended[0]}")
    if unsent:
        notes.append(f"{unsent} turn(s) not sent in all: the server refused a turn of theirs for its context")
    if errors:
        notes.append(f"{failures} tool call(s) could not be run; the first: {errors[0]}")
    return {
        "answers_without_text": kinds or None,
        "ended_early": len(ended),
        "tool_call_failures": failures,
        "turns_not_sent": unsent,
        "notes": tuple(notes),
    }


LATE_FLOOR_S = 0.01  # lateness below this is the event loop's own jitter, whatever the rate


def schedule_note(
    late: list[float], departures: list[float], scheduled: list[float] | None = None
) -> str | None:
    """Whether the client could not send at its schedule's pace: the p99 of its departures'
    lateness past ``LATE_FLOOR_S`` and past the mean gap it kept between departures (so at least
    one request's worth behind). The sentence names the pace it did keep, from the schedule's first
    time (``scheduled``, each request's due time, where known) to its last departure, beside the
    pace asked: a client that stalled, then sent in a burst, kept less than the burst's pace."""
    if len(late) < 2 or len(departures) < 2:
        return None
    p99 = _spread(late, 6).p99 or 0.0
    span = max(departures) - min(departures)
    gap = span / (len(departures) - 1)
    if p99 <= max(LATE_FLOOR_S, gap):
        return None
    n = len(departures) - 1
    if scheduled and len(scheduled) >= 2:
        span = max(departures) - min(scheduled)
    kept = f"{_pace(n / span)} requests/s" if span > 0 else "all at once"
    if scheduled and len(scheduled) >= 2 and max(scheduled) > min(scheduled):
        kept += f" of the {_pace((len(scheduled) - 1) / (max(scheduled) - min(scheduled)))} asked"
    return (
        f"client-limited: the client could not send at the schedule's pace (p99 of departures "
        f"{p99:.3g} s late, worst {max(late):.3g} s; it kept {kept}): the load offered was less "
        "than asked; keep the client off the server's cores (taskset -c on Linux), send from another "
        "machine or with more --processes, or ask for a lower rate"
    )


def _pace(rate: float) -> str:
    """A rate as people read it: 19.6, 846, 2,270 (never 2.27e+03)."""
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}"


def _due(samples: list[Sample]) -> list[float]:
    """Each departed request's due time on the schedule: its departure less its lateness."""
    return [
        s.t_departed - s.tags["schedule_lateness_s"]
        for s in samples
        if s.t_sent is not None and isinstance(s.tags.get("schedule_lateness_s"), (int, float))
    ]


def cached_note(samples: list[Sample]) -> str | None:
    """How many requests said more cached tokens than their prompt (``Sample.cached_note``; no
    cached count was taken from them, so no share passes 1), with the first one's words."""
    told = [s.cached_note for s in samples if s.cached_note]
    return _cached_words(len(told), len(samples), told[0] if told else None)


def _cached_words(told: int, requests: int, first: str | None) -> str | None:
    if not first:
        return None
    return f"{told} of {requests} request(s) had no cached count taken; the first: {first}"


def workload_stats(samples: list[Sample], kind: str, params: dict, open_loop: bool) -> WorkloadStats:
    """The workload fields from a level's samples. Lateness is over every request that left (a
    failed one left late too); the departures' spread over all departures of the level."""
    ok = [s for s in samples if s.ok]
    departed = [s for s in samples if s.t_sent is not None]
    late = [s.tags["schedule_lateness_s"] for s in samples if "schedule_lateness_s" in s.tags]
    conversations = {s.tags["conversation"] for s in samples if "conversation" in s.tags}
    return WorkloadStats(
        kind=kind,
        params=params,
        input_tokens_asked=_tagged(samples, "input_tokens_asked", 1),
        output_tokens_asked=_tagged(samples, "output_tokens_asked", 1),
        input_tokens_sent=_spread([float(s.prompt_tokens) for s in ok if s.prompt_tokens is not None], 1),
        schedule_lateness_s=_spread(late, 6) if late else None,
        departure_gap_cv=coefficient_of_variation(gaps([s.t_departed for s in departed]))
        if open_loop
        else None,
        turns=per_turn(samples),
        conversations=len(conversations) if conversations else None,
        tool_call_turns=sum(1 for s in ok if s.tool_calls) if kind == "agent" else None,
        **(_conversation_notes(samples) if kind in ("conversations", "agent") else {}),
        schedule_note=schedule_note(late, [s.t_departed for s in departed], _due(samples))
        if open_loop
        else None,
        cached_note=cached_note(samples),
        backlog=backlog([Flight(s.t_departed, s.t_end) for s in departed]) if open_loop else None,
    )


def tally_workload_stats(tally: LevelTally, kind: str, params: dict, open_loop: bool) -> WorkloadStats:
    """``workload_stats`` of a level's tally (``harness.measure.tally``): from its samples where it
    kept them, else from its columns, which hold all a closed loop of single requests needs."""
    if tally.samples is not None:
        return workload_stats(tally.samples, kind, params, open_loop)
    if open_loop or kind != "prompts":
        raise ValueError(f"a {kind} level needs its samples kept (LevelTally(keep=True))")
    asked_in, asked_out = tally.col("input_asked"), tally.col("output_asked")
    return WorkloadStats(
        kind=kind,
        params=params,
        input_tokens_asked=_spread(asked_in, 1) if len(asked_in) else None,
        output_tokens_asked=_spread(asked_out, 1) if len(asked_out) else None,
        input_tokens_sent=_spread(tally.col("prompt_tokens"), 1),
        schedule_lateness_s=None,
        departure_gap_cv=None,
        turns=[],
        conversations=None,
        cached_note=_cached_words(tally.cached_notes, tally.requests, tally.first_cached_note),
    )
