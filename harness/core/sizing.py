"""Sizing that holds: the capacity search's criterion, its verdict per level and its next step.
Pure functions over plain values (no I/O, no clock). The regression gate's comparison is
``harness.core.gate``'s.

The capacity search measures one level at a time and pools the per-request values of every run
of a level. A level's verdict is ``pass`` when the whole bootstrap interval of the criterion
(``confidence``, 90 % by default) lies within the promise, ``fail`` when it lies beyond, and
``unsure`` when it straddles the promise; an unsure level is run again, up to ``max_runs``, and is
counted as failing (the safe side) when it stays unsure. Any failed request fails its level.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from harness.core.stats import bootstrap, percentile

METRICS = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2e": "end-to-end latency"}
PERCENTILES = ("p50", "p90", "p95", "p99")


@dataclass(frozen=True)
class Criterion:
    """What "within the promise" means: a percentile of one latency at or below ``limit`` seconds
    (``metric`` ttft, tpot, itl or e2e), or ``goodput``: the share of requests that met both goodput
    objectives at or above ``limit`` (a share between 0 and 1)."""

    metric: str = "ttft"
    pct: str = "p95"
    limit: float = 0.5

    @classmethod
    def parse(cls, text: str, limit: float) -> Criterion:
        """``ttft-p95``, ``e2e-p99``, ``goodput``: ValueError with the accepted forms otherwise."""
        if text == "goodput":
            if not 0 < limit <= 1:
                raise ValueError("with --criterion goodput, --promise is a share of requests in (0, 1]")
            return cls("goodput", "", limit)
        metric, _, pct = text.partition("-")
        if metric not in METRICS or pct not in PERCENTILES:
            forms = ", ".join(f"{m}-p95" for m in METRICS)
            raise ValueError(
                f"criterion {text!r} not known; use METRIC-PCT ({forms}, any of "
                f"{'/'.join(PERCENTILES)}) or goodput"
            )
        if limit <= 0:
            raise ValueError(f"--promise must be a positive number of seconds, got {limit:g}")
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


@dataclass
class LevelRuns:
    """Every run of one level in the search: pooled per-request values and failed requests."""

    level: int
    values: list[float] = field(default_factory=list)
    runs: int = 0
    failed: int = 0

    def add(self, values: list[float], failed: int) -> None:
        self.values += values
        self.failed += failed
        self.runs += 1


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
        return Verdict("fail", figure, None, f"{runs.failed} request(s) failed")
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
    boundary they draw."""
    verdicts = {}
    for c, runs in levels.items():
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
    each has ``confirm`` runs."""
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


def answer(
    state: SearchState, max_users: int, name: Callable[[int], str] = crowd
) -> tuple[int | None, str, str]:
    """The capacity found, its reading (exact, at least, between, none) and the sentence (``name``
    says a level in words: a crowd, or an arrival rate for the open-loop search)."""
    lo, hi = state.lo, state.hi
    if lo is None:
        if hi is not None and hi > 1:
            why = f"{name(hi)} broke the promise and the search stopped before trying less"
            return None, "none", f"none found: {why}"
        return None, "none", f"none: {name(1)} already breaks the promise"
    if hi is None:
        end = (
            f"the search stops at {name(max_users)}"
            if lo >= max_users
            else "the search ran out of time before a level broke it"
        )
        return lo, "at least", f"at least {name(lo)}: every level measured up to it kept the promise ({end})"
    if hi - lo > 1:
        why = "the search ran out of time before narrowing it"
        return lo, "between", f"at least {name(lo)} and less than {name(hi)}: {why}"
    return lo, "exact", f"{name(lo)} keeps the promise and {name(hi)} breaks it"


def _times(ratio: float) -> str:
    """ "about 5 times as much" (a whole number from 2 up, one decimal below)."""
    return f"about {ratio:.0f} times as much" if ratio >= 2 else f"about {ratio:.1f} times as much"


def alone_against_capacity(levels: dict[int, dict], capacity: int | None) -> list[str]:
    """Day 3's numbers 3 and 4 (seed 002) as its sentences: total output alone (a crowd of 1) and at
    the capacity within the promise, with the ratio; and the speed each person sees (1 / TPOT p50)
    alone and at capacity, with how much slower it is. Nothing without both levels."""
    one, top = levels.get(1), levels.get(capacity) if capacity else None
    if not one or not top or capacity == 1:
        return []
    out = []
    alone, full = one.get("output_tokens_per_s"), top.get("output_tokens_per_s")
    if alone and full:
        out.append(
            f"total output: {alone:.1f} tok/s alone, {full:.1f} at {capacity} people, {_times(full / alone)}"
        )
    t1, tn = (one.get("tpot_s") or {}).get("p50"), (top.get("tpot_s") or {}).get("p50")
    if t1 and tn:
        slower = 1 - t1 / tn
        change = f"{slower:.0%} slower" if slower >= 0 else f"{-slower:.0%} faster"
        out.append(
            f"speed each person sees (1 / TPOT p50): {1 / t1:.1f} tok/s alone, {1 / tn:.1f} at {capacity} "
            f"people, {change}"
        )
    return out
