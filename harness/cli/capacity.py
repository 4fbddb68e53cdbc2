"""``harness capacity``: the largest crowd (closed loop) within a promise, found by search.

It doubles the crowd from one until a level breaks the promise, halves the gap to one user, and
runs the two levels at the boundary again until each verdict is stable at the stated confidence
(``harness.core.sizing``), within a time budget. Every run of a level is a level record on the
notebook (marked with the search's run id and the run's number); the path it took is printed as
it goes, and the answer is one ``capacity`` record.

Exit status: 0 when the search ended by itself or at its time budget (the answer is what it
measured); ``SEARCH_ENDED`` (1, as a sweep whose level completed no request) when it ended on a
run the server failed or on a level whose runs contradict each other: every run is still on the
notebook and the capacity record says what passed and why it ended, but the answer is not a
latency verdict. Options refused before any request is sent: 2 (``ConfigError``).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field, replace

from harness.core import bounds, sizing
from harness.core.curves import copies_for
from harness.core.level_records import RunMark
from harness.core.records import Capacity
from harness.core.sample import Sample
from harness.errors import ConfigError
from harness.io.clock import now_stamp
from harness.io.notebook import append_record, check_writable
from harness.cli import sweep as sweep_cli
from harness import options
from harness.energy import meter as telemetry
from harness.energy.record_part import energy_words
from harness.options.search import SEARCH
from harness.options.sizing import SIZING
from harness.load import sweep as sweeping

SEARCH_ENDED = 1  # the server failed a run, or a level's runs contradict each other (module docstring)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "capacity",
        help="the largest crowd within a promise, found by search (p95 TTFT by default)",
        description="Search over concurrency for the largest crowd whose criterion stays within the "
        "promise: doubling, then halving the gap to one user, then repeating the boundary levels "
        "until each verdict is stable. Prints the path, appends every level and one capacity record.",
    )
    options.to_argparse(p, SEARCH, SIZING, command="capacity")
    sweep_cli.add_options(p, levels=False, command="capacity")
    p.set_defaults(func=run, concurrency="1", rate=None, duration=None)  # the plan's levels: the search's


def check(args) -> sizing.Criterion:
    """The search's own options in range (ConfigError, one line) and the criterion they name: a
    promise of 0, below 0, NaN, infinite or past a week, or one no request could be seen to break,
    is refused here, before any request is sent."""

    try:
        criterion = sizing.Criterion.parse(args.criterion, args.promise)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    options.check(args, SEARCH, SIZING.without("promise"))  # the promise is the criterion's, above
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
    tried: list[dict] = field(default_factory=list)
    walls: dict[int, float] = field(default_factory=dict)
    stopped: str = "done"  # done, time, server, contradiction
    ended: str | None = None  # stopped server or contradiction: why, in one line
    answered: bool = False  # the server completed a request in some run of the search
    energy: dict[int, dict] = field(default_factory=dict)  # the latest run's energy part per level

    def name(self, k: int) -> str:
        return sizing.crowd(k) if self.step is None else f"{k * self.step:g} requests/s"

    def rate(self, k: int) -> float | None:
        return None if self.step is None else round(k * self.step, 6)


def run(args) -> int:
    criterion = check(args)
    if args.rate_step is not None:
        args.rate = f"{args.rate_step:g}"  # the plan is an open loop; each level's rate is set below
    plan = sweep_cli.plan_from(args)
    check_writable(plan.labbook)
    check_writable(plan.samples_path, "--samples")
    listed = sweeping.list_models(plan)
    if listed and args.model not in listed:
        print(f"warning: the server lists {', '.join(map(str, listed))}, not {args.model!r}", file=sys.stderr)
    found = Search(args.rate_step)
    over = "crowd" if found.step is None else f"arrival rate (steps of {found.step:g} requests/s)"
    loop = (
        "closed loop"
        if found.step is None
        else f"open loop ({'Poisson' if args.poisson else 'evenly spaced'} arrivals)"
    )
    print(f"==> capacity of {args.model} at {args.base_url}: the largest {over} with {criterion.text}")
    print(
        f"    each verdict from a {args.confidence:.0%} bootstrap interval over the pooled requests; "
        f"boundary levels run at least {args.confirm} times, an unsure level up to {args.max_runs}; "
        f"at most {args.time_budget:g} s; {loop}, prompt set {plan.context.prompt_set}, "
        f"max_tokens {plan.context.max_tokens}, at least {args.requests} request(s) per level",
        flush=True,
    )
    if not args.no_endpoint_check:
        sweep_cli.print_endpoint(sweeping.prove_endpoint(plan, listed))
    meter = telemetry.start(plan.telemetry)  # absent sources in one line each; the idle baseline
    try:
        sweeping.warm_up(plan)
        started = time.monotonic()
        search(args, plan, criterion, found, started, meter)
    finally:
        if meter is not None:
            meter.close()
    if not found.tried:
        raise ConfigError(f"the --time-budget of {args.time_budget:g} s left no time for a single level")
    state = sizing.settled(found.levels, criterion, args.confidence, args.max_runs)
    capacity, reading, sentence = sizing.answer(state, args.max_users, found.name, found.ended)
    watts = energy_words(found.energy.get(capacity)) if capacity else None
    sentence = f"{sentence}; {found.name(capacity)} {watts}" if watts and capacity else sentence
    elapsed = time.monotonic() - started
    measured = len({t["level"] for t in found.tried})
    print(
        f"    capacity with {criterion.text}: {sentence}; {measured} level(s) measured in "
        f"{len(found.tried)} run(s), {elapsed:.0f} s"
    )
    kept = sorted(k for k, v in state.verdicts.items() if v.outcome == "pass")
    if kept:
        print(f"    kept the promise: {', '.join(found.name(k) for k in kept)}")
    record = Capacity(
        label=args.label,
        run={**plan.context.__dict__, "server_slots": args.server_slots or None},
        run_id=plan.run_id,
        criterion={
            "metric": criterion.metric,
            "percentile": criterion.pct,
            "limit": criterion.limit,
            "text": criterion.text,
        },
        confidence=args.confidence,
        capacity=capacity,
        reading=reading,
        answer=sentence,
        tried=found.tried,
        levels_measured=measured,
        runs=len(found.tried),
        elapsed_s=round(elapsed, 1),
        time_budget_s=args.time_budget,
        stopped=found.stopped,
        recorded_at=now_stamp(),
        rate_step_rps=found.step,
        end_reason=found.ended,
    )
    append_record(plan.labbook, record.to_dict(), "capacity")
    print(f"    appended {len(found.tried)} level line(s) and a capacity record to {plan.labbook}")
    if args.peak and capacity and found.step is None:
        need, spare = copies_for(args.peak, capacity, args.spares)
        bound = " (capacity is a lower bound, so this is an upper bound)" if reading != "exact" else ""
        print(
            f"    a peak of {args.peak} needs {args.peak} / {capacity} -> {need} copies, {spare} with "
            f"{args.spares:.0%} spares{bound}"
        )
    if found.ended:
        print(f"harness capacity: the search ended without an answer: {found.ended}", file=sys.stderr)
        return SEARCH_ENDED
    return 0


def search(args, plan, criterion: sizing.Criterion, found: Search, started: float, meter=None) -> None:
    """Measure the level ``next_level`` names until it names none, the time budget would run out,
    or a run ends the search (``sizing.server_failure``, ``sizing.contradiction``); each run on the
    notebook before the next starts, and its line printed."""
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
            print(f"    stopping: {found.name(k)} would not finish within the {args.time_budget:g} s budget")
            return
        rate = found.rate(k)
        level_plan = (
            plan if rate is None else replace(plan, requests=max(plan.requests, math.ceil(rate * 10)))
        )
        result, concurrency, arrival = sweeping.run_level(
            level_plan, k if rate is None else rate, meter=meter
        )
        number = (found.levels[k].runs if k in found.levels else 0) + 1
        mark = RunMark(plan.run_id, number)
        written = sweeping.record_level(level_plan, result, concurrency, arrival, mark, meter)
        if written.energy is not None:
            found.energy[k] = written.energy
        found.walls[k] = max(found.walls.get(k, 0.0), result.wall_s)
        values, errors = values_of(result.samples, criterion, plan.context.objectives)
        where = f"c={k:<4}" if rate is None else f"rate {rate:g}/s (peak {concurrency} in flight)"
        completed = len(result.samples) - len(errors)
        broken = sizing.server_failure(errors, completed, found.answered)
        found.answered = found.answered or completed > 0
        if broken:
            found.stopped, found.ended = "server", f"{found.name(k)}, run {number}: {broken}"
            _tried(found, k, rate, number, criterion.statistic(values), None, "error", broken)
            print(f"    [{len(found.tried)}] {where} run {number}: {broken} -> the search ends", flush=True)
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
        print(
            f"    [{len(found.tried)}] {where} run {runs.runs}: {criterion.text.split(' <=')[0]} "
            f"{_f(found.tried[-1]['figure'])} (pooled {_f(v.figure)}; {v.why}) -> {v.outcome}",
            flush=True,
        )
        clash = sizing.contradiction(runs, found.name)
        if clash:
            found.stopped, found.ended = "contradiction", clash
            print(f"    stopping: {clash}", flush=True)
            return


def _tried(
    found: Search, k: int, rate, number: int, figure, v: sizing.Verdict | None, outcome: str, why: str
) -> None:
    """One run in the search's path, as the capacity record lists it."""
    found.tried.append(
        {
            "level": k,
            **({} if rate is None else {"rate_rps": rate}),
            "run": number,
            "figure": _round(figure),
            "pooled": None if v is None else _round(v.figure),
            "interval": None if v is None or v.interval is None else [_round(x) for x in v.interval],
            "verdict": outcome,
            "why": why,
        }
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
