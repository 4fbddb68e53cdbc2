"""The capacity search: the largest crowd (closed loop) or arrival rate (open loop) within a promise.

It doubles the crowd from one until a level breaks the promise, halves the gap to one user, and
runs the two levels at the boundary again until each verdict is stable at the stated confidence
(``harness.sizing.criterion``), within a time budget. The caller measures each level (``Measure``) and
hears each line of the path (``say``); the answer comes back as one ``capacity`` record.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from harness import bounds
from harness.sizing import criterion as sizing
from harness.measure.curves import copies_for
from harness.records.sizing import Capacity, SearchCriterion, SearchRun, TriedRun
from harness.measure.sample import Sample
from harness.errors import ConfigError
from harness.energy.record_part import energy_words
from harness.records.clock import now_stamp


@dataclass(frozen=True)
class Measured:
    """One run of one level, as the search reads it: the requests, how long it took, the crowd it
    counts as, and the energy part its level record carried (None without telemetry)."""

    samples: list[Sample]
    wall_s: float
    concurrency: int
    energy: dict | None = None


class Measure(Protocol):
    """Runs level ``k`` (a crowd, or ``rate`` requests/s) for the ``number``-th time and records it."""

    def __call__(self, k: int, rate: float | None, number: int) -> Measured: ...


def check(args) -> sizing.Criterion:
    """The criterion the options name, and the bounds the options set on each other (ConfigError,
    one line): a promise of 0, below 0, NaN, infinite or past a week, or one no request could be seen
    to break, is refused here, before any request is sent. Each option's own range the caller checked."""

    try:
        criterion = sizing.Criterion.parse(args.criterion, args.promise)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    bounds.number("--start", args.start, 1, args.max_users, whole=True)  # the bounds other options set
    bounds.number("--max-runs", args.max_runs, args.confirm, 50, whole=True)
    if args.rate_step is None and args.poisson:
        raise ConfigError("--poisson needs --rate-step (the open-loop search)")
    cut = _cut_at(args, criterion.metric)
    if cut is not None and criterion.limit >= cut:
        raise ConfigError(
            f"--promise {criterion.limit:g} s is not below the {cut:g} s at which each request is cut "
            "(--timeout, --idle-timeout, --timeout-per-user), so no request could show it broken; "
            "raise the timeout or lower the promise"
        )
    return criterion


def _cut_at(args, metric: str) -> float | None:
    """The seconds past which a request's TTFT (the idle bound too) or end-to-end time is cut at
    the first level, so never measured; None for the per-token criteria."""
    per_user = bounds.number("--timeout-per-user", args.timeout_per_user, 0, bounds.MAX_SECONDS)
    total = bounds.crowd_timeout(bounds.seconds("--timeout", args.timeout), per_user, args.start)
    cut = bounds.Bounds.of(total, args.idle_timeout)
    return {"ttft": cut.idle_s, "e2e": cut.total_s}.get(metric)


def values_of(
    samples: list[Sample], criterion: sizing.Criterion, objectives
) -> tuple[list[float], list[str | None]]:
    """Per-request values the criterion reads (every inter-token gap for ITL; 1 or 0 for goodput)
    and the error of each failed request."""
    ok = [s for s in samples if s.ok]
    failed = [s.error for s in samples if not s.ok]
    m = criterion.metric
    if m == "ttft":
        return [s.ttft for s in ok if s.ttft is not None], failed
    if m == "tpot":
        return [s.tpot for s in ok if s.tpot is not None], failed
    if m == "itl":
        return [gap for s in ok for gap in s.itl], failed
    if m == "e2e":
        return [s.t_end - s.t_departed for s in ok if s.t_end is not None], failed
    good = [
        1.0
        if s.ttft is not None and s.ttft <= objectives.ttft_s and (s.tpot or 0.0) <= objectives.tpot_s
        else 0.0
        for s in ok
    ]
    return good, failed


def _f(v) -> str:
    return "-" if v is None else f"{v:.3f}"


@dataclass
class Search:
    """One search in progress: what it measures over (crowds, or arrival rates of ``step`` each),
    the runs of each level and every run tried, in order."""

    step: float | None  # None: closed loop over crowds; else open loop at k x step requests/s
    levels: dict[int, sizing.LevelRuns] = field(default_factory=dict)
    tried: list[TriedRun] = field(default_factory=list)
    walls: dict[int, float] = field(default_factory=dict)
    stopped: str = "done"  # done, time, server, contradiction
    ended: str | None = None  # stopped server or contradiction: why, in one line
    answered: bool = False  # the server completed a request in some run of the search
    energy: dict[int, dict] = field(default_factory=dict)  # the latest run's energy part per level

    def name(self, k: int) -> str:
        return sizing.crowd(k) if self.step is None else f"{k * self.step:g} requests/s"

    def rate(self, k: int) -> float | None:
        return None if self.step is None else round(k * self.step, 6)


def head_lines(args, context, criterion: sizing.Criterion, found: Search) -> list[str]:
    """What the search is about to do, in two lines: over what, the promise, and how sure."""
    over = "crowd" if found.step is None else f"arrival rate (steps of {found.step:g} requests/s)"
    loop = (
        "closed loop"
        if found.step is None
        else f"open loop ({'Poisson' if args.poisson else 'evenly spaced'} arrivals)"
    )
    return [
        f"==> capacity of {args.model} at {args.base_url}: the largest {over} with {criterion.text}",
        f"    each verdict from a {args.confidence:.0%} bootstrap interval over the pooled requests; "
        f"boundary levels run at least {args.confirm} times, an unsure level up to {args.max_runs}; "
        f"at most {args.time_budget:g} s; {loop}, prompt set {context.prompt_set}, "
        f"max_tokens {context.max_tokens}, at least {args.requests} request(s) per level",
    ]


def search(
    args, criterion: sizing.Criterion, objectives, found: Search, started: float, measure: Measure, say
) -> None:
    """Measure the level ``next_level`` names until it names none, the time budget would run out,
    or a run ends the search (``sizing.server_failure``, ``sizing.contradiction``); each run is
    recorded by ``measure`` before the next starts, and its line given to ``say``."""
    while True:
        k = sizing.next_level(
            found.levels, criterion, args.max_users, args.confidence, args.confirm, args.max_runs, args.start
        )
        if k is None:
            return
        guess = (
            estimate(found.walls, k, args.requests, args.min_rounds)
            if found.step is None
            else max(found.walls.values(), default=0.0)
        )
        if time.monotonic() - started + guess > args.time_budget:
            found.stopped = "time"
            say(f"    stopping: {found.name(k)} would not finish within the {args.time_budget:g} s budget")
            return
        rate = found.rate(k)
        number = (found.levels[k].runs if k in found.levels else 0) + 1
        got = measure(k, rate, number)
        if got.energy is not None:
            found.energy[k] = got.energy
        found.walls[k] = max(found.walls.get(k, 0.0), got.wall_s)
        values, errors = values_of(got.samples, criterion, objectives)
        where = f"c={k:<4}" if rate is None else f"rate {rate:g}/s (peak {got.concurrency} in flight)"
        completed = len(got.samples) - len(errors)
        broken = sizing.server_failure(errors, completed, found.answered)
        found.answered = found.answered or completed > 0
        if broken:
            found.stopped, found.ended = "server", f"{found.name(k)}, run {number}: {broken}"
            _tried(found, k, rate, number, criterion.statistic(values), None, "error", broken)
            say(f"    [{len(found.tried)}] {where} run {number}: {broken} -> the search ends")
            return
        late = [e for e in errors if sizing.is_late(e)]
        first = late[0] if late else None
        own = sizing.verdict(
            sizing.LevelRuns(k, list(values), 1, len(late), first), criterion, args.confidence
        )
        runs = found.levels.setdefault(k, sizing.LevelRuns(k))
        runs.add(values, len(late), first, own.outcome, own.figure)
        v = sizing.verdict(runs, criterion, args.confidence)
        _tried(found, k, rate, number, criterion.statistic(values), v, v.outcome, v.why)
        say(
            f"    [{len(found.tried)}] {where} run {runs.runs}: {criterion.text.split(' <=')[0]} "
            f"{_f(found.tried[-1].figure)} (pooled {_f(v.figure)}; {v.why}) -> {v.outcome}"
        )
        clash = sizing.contradiction(runs, found.name)
        if clash:
            found.stopped, found.ended = "contradiction", clash
            say(f"    stopping: {clash}")
            return


def _tried(
    found: Search, k: int, rate, number: int, figure, v: sizing.Verdict | None, outcome: str, why: str
) -> None:
    """One run in the search's path, as the capacity record lists it."""
    found.tried.append(
        TriedRun(
            level=k,
            run=number,
            figure=_round(figure),
            pooled=None if v is None else _round(v.figure),
            interval=None if v is None or v.interval is None else [round(x, 5) for x in v.interval],
            verdict=outcome,
            why=why,
            rate_rps=rate,
        )
    )


def estimate(walls: dict[int, float], c: int, requests: int, min_rounds: int) -> float:
    """A guess at how long level ``c`` takes, from the largest level measured at or below it: its
    time per round of requests, times the rounds ``c`` runs, doubled when ``c`` is larger (each
    request may then wait for a seat behind another)."""
    below = [k for k in walls if k <= c]
    if not below:
        return 0.0
    k = max(below)

    def rounds(x: int) -> int:
        return -(-max(requests, min_rounds * x) // x)

    return walls[k] / rounds(k) * rounds(c) * (2.0 if c > k else 1.0)


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 5)


@dataclass(frozen=True)
class Answer:
    """What the search found: the capacity record, and the levels that kept the promise."""

    record: Capacity
    kept: list[int]


def answer(
    args, context: dict, run_id: str, criterion: sizing.Criterion, found: Search, elapsed: float
) -> Answer:
    """The capacity record of a finished search (ConfigError when the budget left no level at all)."""
    if not found.tried:
        raise ConfigError(f"the --time-budget of {args.time_budget:g} s left no time for a single level")
    state = sizing.settled(found.levels, criterion, args.confidence, args.max_runs)
    capacity, reading, sentence = sizing.answer(state, args.max_users, found.name, found.ended)
    watts = energy_words(found.energy.get(capacity)) if capacity else None
    sentence = f"{sentence}; {found.name(capacity)} {watts}" if watts and capacity else sentence
    record = Capacity(
        label=args.label,
        run=SearchRun.of(context),
        run_id=run_id,
        criterion=SearchCriterion(criterion.metric, criterion.pct, criterion.limit, criterion.text),
        confidence=args.confidence,
        capacity=capacity,
        reading=reading,
        answer=sentence,
        tried=found.tried,
        levels_measured=len({t.level for t in found.tried}),
        runs=len(found.tried),
        elapsed_s=round(elapsed, 1),
        time_budget_s=args.time_budget,
        stopped=found.stopped,
        recorded_at=now_stamp(),
        rate_step_rps=found.step,
        end_reason=found.ended,
    )
    return Answer(record, sorted(k for k, v in state.verdicts.items() if v.outcome == "pass"))


def answer_lines(args, criterion: sizing.Criterion, found: Search, got: Answer, labbook) -> list[str]:
    """The answer in words: the capacity and how it was found, the levels that kept the promise,
    where the records went, and the copies a ``--peak`` crowd needs."""
    rec = got.record
    out = [
        f"    capacity with {criterion.text}: {rec.answer}; {rec.levels_measured} level(s) measured in "
        f"{rec.runs} run(s), {rec.elapsed_s:.0f} s"
    ]
    if got.kept:
        out.append(f"    kept the promise: {', '.join(found.name(k) for k in got.kept)}")
    out.append(f"    appended {rec.runs} level line(s) and a capacity record to {labbook}")
    if args.peak and rec.capacity and found.step is None:
        need, spare = copies_for(args.peak, rec.capacity, args.spares)
        bound = " (capacity is a lower bound, so this is an upper bound)" if rec.reading != "exact" else ""
        out.append(
            f"    a peak of {args.peak} needs {args.peak} / {rec.capacity} -> {need} copies, {spare} with "
            f"{args.spares:.0%} spares{bound}"
        )
    return out
