"""Sizing that holds: the capacity search's criterion, its verdict per level, its next step and
when it must end without an answer. Pure functions over plain values (no I/O, no clock). The
regression gate's comparison is ``harness.sizing.gate``'s.

The capacity search measures one level at a time and pools the per-request values of every run
of a level. A level's verdict is ``pass`` when the whole bootstrap interval of the criterion
(``confidence``, 90 % by default) lies within the promise, ``fail`` when it lies beyond, and
``unsure`` when it straddles the promise; an unsure level is run again, up to ``max_runs``, and is
counted as failing (the safe side) when it stays unsure. A request that failed past its bound
(``Timeout``, ``Cancelled``) was slower than the bound, so it fails its level.

A run that says the server failed rather than answered slowly (``server_failure``: no request
completed, or one failed in a way that is no latency, an HTTP error, a refused or reset
connection, a broken stream) is no latency verdict: it is never pooled, and the search ends there
with what it measured. So does a level whose own runs contradict each other (``contradiction``:
one run's whole interval within the promise, another's beyond, and their figures at least
``CONTRADICTION_RATIO`` apart). Runs on either side of the promise but close to it are the noise
near a boundary, not a contradiction: they are pooled, and the pooled level is run again while
it is unsure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from harness import lab
from harness.bounds import MAX_SECONDS
from harness.records.level import DIST, LevelStats
from harness.safe_text import safe_text
from harness.measure.stats import bootstrap, percentile

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

METRICS = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2e": "end-to-end latency"}
PERCENTILES = (DIST.p50, DIST.p90, DIST.p95, DIST.p99)
# How far apart a passing and a failing run of one level must be to contradict each other: one
# run's figure at least twice the other's (a latency or a goodput share alike). A CPU server's
# p95 moving 0.47 -> 0.54 s around a 0.5 s promise between two runs is noise to pool; 0.05 -> 1 s
# is a server that flips.
CONTRADICTION_RATIO = 2.0


@dataclass(frozen=True)
class Criterion:
    """What "within the promise" means: a percentile of one latency at or below ``limit`` seconds
    (``metric`` ttft, tpot, itl or e2e), or ``goodput``: the share of requests that met both goodput
    objectives at or above ``limit`` (a share between 0 and 1)."""

    metric: str = "ttft"
    pct: str = DIST.p95
    limit: float = 0.5

    @classmethod
    def parse(cls, text: str, limit: float) -> Criterion:
        """``ttft-p95``, ``e2e-p99``, ``goodput``: ValueError with the accepted forms otherwise."""
        if text == "goodput":
            if not 0 < limit <= 1:  # NaN compares false, so it is refused here too
                raise ValueError(
                    f"with --criterion goodput, --promise is a share of requests in (0, 1], got {limit!r}"
                )
            return cls("goodput", "", limit)
        metric, _, pct = text.partition("-")
        if metric not in METRICS or pct not in PERCENTILES:
            forms = ", ".join(f"{m}-p95" for m in METRICS)
            raise ValueError(
                f"criterion {text!r} not known; use METRIC-PCT ({forms}, any of "
                f"{'/'.join(PERCENTILES)}) or goodput"
            )
        if not (math.isfinite(limit) and 0 < limit <= MAX_SECONDS):
            raise ValueError(
                f"--promise takes a positive number of seconds up to {MAX_SECONDS:.0f} (a week), "
                f"got {limit!r}"
            )
        return cls(metric, pct, limit)

    @property
    def text(self) -> str:
        if self.metric == "goodput":
            return f"at least {self.limit:.0%} of requests within the goodput objective"
        return f"{METRICS[self.metric]} {self.pct} <= {self.limit:g} s"

    def statistic(self, values: list[float]) -> float | None:
        """The criterion's figure over per-request values (latencies in s, or 1/0 for goodput)."""
        if not values:
            return None
        if self.metric == "goodput":
            return sum(values) / len(values)
        return percentile(values, float(self.pct[1:]))

    def within(self, figure: float) -> bool:
        return figure >= self.limit if self.metric == "goodput" else figure <= self.limit


# The failures that are latencies: the request passed its bound (harness.endpoints.http_client, harness.load)
# or was still running at the level's (harness.measure.levels), so it was slower than that bound.
LATE_ERRORS = ("Timeout", "Cancelled")


def is_late(error: str | None) -> bool:
    return (error or "").startswith(LATE_ERRORS)


def server_failure(errors: list[str | None], completed: int, answered_before: bool = False) -> str | None:
    """Why a run's failed requests (``errors``, one per failed request) say the server failed
    rather than answered slowly, or None: one failed in a way that is no latency (anything but
    ``LATE_ERRORS``), or no request completed and the server never answered one in the search
    (``answered_before``: a server that answered smaller levels and now lets every request pass
    its bound is slow there, so that level fails the promise)."""
    broken = [e for e in errors if not is_late(e)]
    if not completed and (broken or not answered_before):
        first = safe_text(errors[0] or "no reason given", 200) if errors else "no request was sent"
        return f"no request of {len(errors)} completed (first error: {first})"
    if not broken:
        return None
    first = safe_text(broken[0] or "no reason given", 200)
    return f"the server failed {len(broken)} of {len(errors) + completed} request(s) (first: {first})"


@dataclass
class LevelRuns:
    """Every run of one level in the search: pooled per-request values, requests that failed past
    their bound (and the first one's error), and each run's own verdict, in order."""

    level: int
    values: list[float] = field(default_factory=list)
    runs: int = 0
    failed: int = 0
    first_error: str | None = None
    own: list[str] = field(default_factory=list)
    figures: list[float | None] = field(default_factory=list)  # each run's own figure, in order

    def add(
        self,
        values: list[float],
        failed: int,
        first_error: str | None = None,
        own: str = "",
        figure: float | None = None,
    ) -> None:
        self.values += values
        self.failed += failed
        self.first_error = self.first_error or first_error
        self.runs += 1
        self.own.append(own)
        self.figures.append(figure)


@dataclass(frozen=True)
class Verdict:
    outcome: str  # pass, fail, unsure
    figure: float | None
    interval: tuple[float, float] | None
    why: str


def verdict(runs: LevelRuns, criterion: Criterion, confidence: float = 0.9) -> Verdict:
    """A level's verdict from its pooled values (see the module's docstring)."""
    figure = criterion.statistic(runs.values)
    if runs.failed:
        first = f" (first: {safe_text(runs.first_error, 200)})" if runs.first_error else ""
        return Verdict("fail", figure, None, f"{runs.failed} request(s) failed past their bound{first}")
    if figure is None:
        return Verdict("fail", None, None, "no request completed")
    interval = bootstrap(runs.values, criterion.statistic, confidence)
    assert interval is not None
    inside = [criterion.within(x) for x in interval]
    share = f"{confidence:.0%} interval {interval[0]:.3f}-{interval[1]:.3f}"
    if all(inside):
        return Verdict("pass", figure, interval, share + " within")
    if not any(inside):
        return Verdict("fail", figure, interval, share + " beyond")
    return Verdict("unsure", figure, interval, share + " straddles the promise")


@dataclass(frozen=True)
class SearchState:
    """What the search knows: ``lo`` the largest passing level below ``hi``, the smallest failing."""

    lo: int | None
    hi: int | None
    verdicts: dict[int, Verdict]


def settled(
    levels: dict[int, LevelRuns], criterion: Criterion, confidence: float, max_runs: int
) -> SearchState:
    """Each level's verdict (an unsure level that has had ``max_runs`` counts as failing) and the
    boundary they draw. A level whose runs contradict each other has no verdict: it draws none."""
    verdicts = {}
    for c, runs in levels.items():
        if contradiction(runs):
            continue
        v = verdict(runs, criterion, confidence)
        if v.outcome == "unsure" and runs.runs >= max_runs:
            v = Verdict("fail", v.figure, v.interval, v.why + f" after {runs.runs} runs: counted as failing")
        verdicts[c] = v
    fails = [c for c, v in verdicts.items() if v.outcome == "fail"]
    hi = min(fails) if fails else None
    passes = [c for c, v in verdicts.items() if v.outcome == "pass" and (hi is None or c < hi)]
    return SearchState(max(passes) if passes else None, hi, verdicts)


def next_level(
    levels: dict[int, LevelRuns],
    criterion: Criterion,
    max_users: int,
    confidence: float = 0.9,
    confirm: int = 2,
    max_runs: int = 4,
    start: int = 1,
) -> int | None:
    """The level to measure next, or None when the search is done: an unsure level again, else
    doubling from ``start`` until a level fails (or ``max_users``), then halving the gap between
    the largest pass and the smallest fail to one user, then the two boundary levels run until
    each has ``confirm`` runs. None too once a level's runs contradict each other (the search
    ends there, ``contradiction``)."""
    if any(contradiction(runs) for runs in levels.values()):
        return None
    state = settled(levels, criterion, confidence, max_runs)
    for c in sorted(levels):
        if state.verdicts[c].outcome == "unsure":
            return c
    lo, hi = state.lo, state.hi
    if hi is None:
        return start if lo is None else None if lo >= max_users else min(lo * 2, max_users)
    if lo is None:  # the smallest failing level is below every pass: halve towards one
        return None if hi <= 1 else max(1, hi // 2)
    if hi - lo > 1:
        return (lo + hi) // 2
    for c in (lo, hi):
        if levels[c].runs < confirm:
            return c
    return None


def crowd(k: int) -> str:
    return f"{k} at once"


def contradiction(runs: LevelRuns, name: Callable[[int], str] = crowd) -> str | None:
    """Why ``runs`` cannot be pooled into one verdict, or None: one run of the level, on its own,
    kept the promise with its whole interval and another broke it with its whole interval, one's
    figure at least ``CONTRADICTION_RATIO`` times the other's (a server whose answer to the same load flips
    between runs, so no boundary it draws holds). A run without a figure (its requests failed
    past their bound) is as far as can be from one that passed."""
    if "pass" not in runs.own or "fail" not in runs.own:
        return None
    kept, broke = runs.own.index("pass") + 1, runs.own.index("fail") + 1
    figures = runs.figures + [None] * (len(runs.own) - len(runs.figures))
    a, b = figures[kept - 1], figures[broke - 1]
    if a is not None and b is not None and min(a, b) > 0 and max(a, b) < CONTRADICTION_RATIO * min(a, b):
        return None  # both sides of the promise, but near it: noise to pool
    said = (
        f"kept the promise in run {kept} and broke it in run {broke}"
        if kept < broke
        else f"broke the promise in run {broke} and kept it in run {kept}"
    )
    return f"{name(runs.level)} {said}: the server's answers to one load contradict each other"


def answer(
    state: SearchState, max_users: int, name: Callable[[int], str] = crowd, ended: str | None = None
) -> tuple[int | None, str, str]:
    """The capacity found, its reading (exact, at least, between, none) and the sentence (``name``
    says a level in words: a crowd, or an arrival rate for the open-loop search). ``ended``: why
    the search stopped before it was done (a server failure, a contradiction); None when it
    finished or ran out of time. The sentence says what broke the promise, and why it stopped."""
    lo, hi = state.lo, state.hi
    if lo is None:
        if hi is None:
            return None, "none", f"none known: {_before('a level had a verdict that holds', ended)}"
        why = state.verdicts[hi].why
        if hi > 1:
            return (
                None,
                "none",
                f"none found: {name(hi)} broke the promise ({why}) and {_before('trying less', ended)}",
            )
        ending = f"; the search ended: {ended}" if ended else ""
        return None, "none", f"none: {name(1)} already breaks the promise ({why}){ending}"
    if hi is None:
        end = (
            f"the search stops at {name(max_users)}"
            if lo >= max_users and not ended
            else _before("a level broke it", ended)
        )
        return lo, "at least", f"at least {name(lo)}: every level measured up to it kept the promise ({end})"
    if hi - lo > 1:
        return (
            lo,
            "between",
            f"at least {name(lo)} and less than {name(hi)}: {_before('narrowing it', ended)}",
        )
    sentence = f"{name(lo)} keeps the promise and {name(hi)} breaks it"
    return lo, "exact", sentence + (f"; {_before('confirming it', ended)}" if ended else "")


def _before(what: str, ended: str | None) -> str:
    return (
        f"the search ended before {what}: {ended}" if ended else f"the search ran out of time before {what}"
    )


def _times(ratio: float) -> str:
    """ "about 5 times as much" (a whole number from 2 up, one decimal below)."""
    return f"about {ratio:.0f} times as much" if ratio >= 2 else f"about {ratio:.1f} times as much"


# Day 3's worksheet: the figures it wants alone and at the capacity within the promise.
TOTAL_OUTPUT, EACH_PERSONS_SPEED = lab.worksheet("day3_alone_against_capacity")[1]


def alone_against_capacity(levels: dict[int, dict], capacity: int | None) -> list[str]:
    """Day 3's worksheet figures on capacity as its sentences: total output alone (a crowd of 1) and at
    the capacity within the promise, with the ratio; and the speed each person sees (1 / TPOT p50)
    alone and at capacity, with how much slower it is. Nothing without both levels."""
    one, top = levels.get(1), levels.get(capacity) if capacity else None
    if not one or not top or capacity == 1:
        return []
    out = []
    alone, full = LevelStats.read(one).output_tokens_per_s, LevelStats.read(top).output_tokens_per_s
    if alone and full:
        out.append(
            f"{TOTAL_OUTPUT}: {alone:.1f} tok/s alone, {full:.1f} at {capacity} people, "
            + _times(full / alone)
        )
    t1, tn = LevelStats.read(one).tpot_s.p50, LevelStats.read(top).tpot_s.p50
    if t1 and tn:
        slower = 1 - t1 / tn
        change = f"{slower:.0%} slower" if slower >= 0 else f"{-slower:.0%} faster"
        out.append(
            f"{EACH_PERSONS_SPEED}: {1 / t1:.1f} tok/s alone, {1 / tn:.1f} at {capacity} people, {change}"
        )
    return out
