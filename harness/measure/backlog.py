"""Whether the server kept up with an open loop's arrivals (pure): the server half of the rule
"a schedule the server cannot keep is reported as lateness and as client- or server-limited,
never silently stretched".

An open loop sends on its schedule whatever the server does; a server that cannot serve the rate
offered finishes fewer requests a second than arrive, so requests pile up in flight. Once the
first requests have had time to finish (the window starts one early request's time after the
first departure: the longest time in system of the first quarter of the requests, at most half
the schedule), a server that
keeps up finishes about as many requests as arrive, and the number in flight holds. The level is
**server-limited** when, over that window (from its start to the last departure), the requests
that finished were at most ``KEPT`` (80 %) of those that arrived, and the number in flight rose by
at least ``RISE_FLOOR`` requests (a pile-up, not the noise of a few), the finishes fell behind in
each half of the window (``HALF_KEPT``: all through, not one burst of arrivals or the tail of the
first requests' ramp), and the last quarter of the requests spent ``GROWTH`` (1.5) times as long
in the system as the first quarter (the median of each: they waited). The figures: the rates
offered and finished over the window, the rise, the level's peak in flight and the two times in
the system. On simulated servers (``served`` in tests/unit/measure/test_backlog.py: first come first
served, 1 to 16 seats or as many as two thirds' load needs; 16 to 200 requests, service times
spread up to fourfold, random seeds) this named 2,790 of 2,867 judged levels offered 1.3 to 5 times
the capacity with Poisson arrivals, and 4 of 1,907 at two thirds of it (even or Poisson arrivals).

A level too short to tell (a schedule shorter than twice its quickest early request's time in the
system; fewer than ``MIN_WINDOW`` arrivals in the window, or a quarter of the level; a first
request that never ended) is no verdict, and says why. The client-limited verdict (the client
could not send on time: ``workload_stats.schedule_note``) wins when both apply: the load offered
was not what was asked, so the server's shortfall is against a rate nobody measured; the record
says so (``server_note``) and ``server_limited`` is false.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from typing import ClassVar, Iterable

from harness.schema_facts import FieldNames, fact
from harness.records.level import LEVEL

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

KEPT = 0.8  # a server finishing at most this share of the window's arrivals did not keep up
HALF_KEPT = 0.9  # and at most this share in each half of the window (a pile-up all through)
GROWTH = 1.5  # and the last quarter's requests spent this much longer in the system than the first's
RISE_FLOOR = 3  # and the number in flight rose by at least this many over the window
MIN_WINDOW = 4  # arrivals a window needs (and a quarter of the level's) to tell anything
MIN_REQUESTS = 8  # departures a level needs for a verdict


@dataclass(frozen=True)
class Flight:
    """One request of an open loop: when it left and when it ended (None: never, within the level)."""

    departed: float
    ended: float | None


@dataclass(frozen=True)
class Backlog:
    """The level's arrivals against the server's finishes, over the window after the first requests
    had time to finish (``backlog``)."""

    judged: bool = fact("false: too short to tell, reason says why", required=True)
    server_limited: bool = fact(written=False)  # the level record says it beside (server_limited)
    peak_in_flight: int = fact(required=True, minimum=0)
    window_s: float | None = fact(minimum=0, default=None)  # from the window's start to the last departure
    arrived: int | None = fact("departures in the window", minimum=0, default=None)
    finished: int | None = fact(
        "requests that ended in the window, answered or failed", minimum=0, default=None
    )
    in_flight_rise: int | None = fact(
        "arrived - finished: how much the number in flight grew over the window", default=None
    )
    reason: str | None = fact(default=None)  # no verdict: why
    # the median time in system (departure to end) of the first quarter, and of the last quarter
    # (inf: half of them never ended): the line's time_in_system_s
    early_s: float | None = fact(written=False, default=None)
    late_s: float | None = fact(written=False, default=None)

    SCHEMA_FACTS: ClassVar[dict] = {"additionalProperties": False}
    SCHEMA_AFTER: ClassVar[dict] = {  # the line's figures computed from the fields
        "offered_rps": {"type": "number", "minimum": 0, "description": "arrived / window_s"},
        "finished_rps": {"type": "number", "minimum": 0, "description": "finished / window_s"},
        "time_in_system_s": {
            "type": "array",
            "items": {"type": ["number", "null"], "minimum": 0},
            "minItems": 2,
            "maxItems": 2,
            "description": "the median time from departure to end of the first quarter of the requests and "
            "of the last quarter (null: half of them never ended)",
        },
    }

    @property
    def offered_rps(self) -> float | None:
        return None if not self.window_s or self.arrived is None else self.arrived / self.window_s

    @property
    def finished_rps(self) -> float | None:
        return None if not self.window_s or self.finished is None else self.finished / self.window_s

    def to_dict(self) -> dict:
        out: dict = {"judged": self.judged, "peak_in_flight": self.peak_in_flight}
        if self.judged:
            out.update(
                window_s=round(self.window_s or 0.0, 3),
                arrived=self.arrived,
                finished=self.finished,
                offered_rps=round(self.offered_rps or 0.0, 3),
                finished_rps=round(self.finished_rps or 0.0, 3),
                in_flight_rise=self.in_flight_rise,
                time_in_system_s=[_seconds(self.early_s), _seconds(self.late_s)],
            )
        else:
            out[BACKLOG.reason] = self.reason
        return out


BACKLOG = FieldNames(Backlog)  # a level line's backlog keys (judged, offered_rps, ...)


def most_at_once(spans: Iterable[tuple[float, float | None]]) -> int:
    """The most spans open at one moment, each ``(start, end)`` on one clock; an end of None never
    closes (a request that never ended stays in flight). An end at the moment of another's start
    closes first."""
    events: list[tuple[float, int]] = []
    for start, end in spans:
        events.append((start, 1))
        if end is not None:
            events.append((end, -1))
    now = peak = 0
    for _, step in sorted(events):
        now += step
        peak = max(peak, now)
    return peak


def peak_in_flight(flights: list[Flight]) -> int:
    """The most requests in flight at one moment (a request that never ended stays in flight)."""
    return most_at_once((f.departed, f.ended) for f in flights)


def backlog(flights: list[Flight]) -> Backlog:
    """The verdict on an open loop's level from its requests' departures and ends (see the module's
    docstring for the rule)."""
    peak = peak_in_flight(flights)
    n = len(flights)
    if n < MIN_REQUESTS:
        return Backlog(
            False, False, peak, reason=f"{n} request(s): too few to tell (at least {MIN_REQUESTS})"
        )
    ordered = sorted(flights, key=lambda f: f.departed)
    first = ordered[: max(1, n // 4)]
    if any(f.ended is None for f in first):
        return Backlog(False, False, peak, reason="a request of the level's first quarter never ended")
    last = ordered[-1].departed
    quickest = min((f.ended or 0.0) - f.departed for f in first)
    if last - ordered[0].departed < 2 * quickest:
        return Backlog(
            False,
            False,
            peak,
            reason=(
                f"too short to tell: the schedule's {last - ordered[0].departed:.3g} s are less than two of "
                f"its quickest early request's {quickest:.3g} s in the server; more --requests make a longer "
                "level"
            ),
        )
    # the first requests' time to finish, at most half the schedule: past capacity the first quarter
    # already waited, and a window that never opened would hide the plainest pile-up
    settle = min(max((f.ended or 0.0) - f.departed for f in first), (last - ordered[0].departed) / 2)
    start = ordered[0].departed + settle
    departures = [f.departed for f in ordered]
    arrived = n - bisect_right(departures, start)
    need = max(MIN_WINDOW, math.ceil(n / 4))
    if last <= start or arrived < need:
        return Backlog(
            False,
            False,
            peak,
            reason=(
                f"too short to tell: the schedule's {last - departures[0]:.3g} s hold {arrived} departure(s) "
                f"after the first requests' {settle:.3g} s in the server (at least {need} needed); more "
                "--requests make a longer level"
            ),
        )
    ends = sorted(f.ended for f in flights if f.ended is not None)

    def counts(a: float, b: float) -> tuple[int, int]:  # (arrived, finished) in (a, b]
        return (
            bisect_right(departures, b) - bisect_right(departures, a),
            bisect_right(ends, b) - bisect_right(ends, a),
        )

    arrived, finished = counts(start, last)
    rise = arrived - finished
    middle = (start + last) / 2
    # behind in each half of the window, not a burst in one or the tail of the first requests' ramp
    halves = [counts(start, middle), counts(middle, last)]
    early, late = _time_in_system(ordered[: max(1, n // 4)]), _time_in_system(ordered[-max(1, n // 4) :])
    limited = (
        finished <= KEPT * arrived
        and rise >= RISE_FLOOR
        and all(done <= HALF_KEPT * came for came, done in halves)
        and late >= GROWTH * early
    )
    return Backlog(True, limited, peak, last - start, arrived, finished, rise, early_s=early, late_s=late)


def _time_in_system(flights: list[Flight]) -> float:
    """The median time from departure to end of some requests (one that never ended: forever)."""
    times = sorted(math.inf if f.ended is None else f.ended - f.departed for f in flights)
    mid = len(times) // 2
    return times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2


def server_note(found: Backlog, client_limited: bool) -> str | None:
    """The sentence a level record carries: server-limited with its figures; the server fell behind
    too but the client's verdict wins; or None when the server kept up or there was no verdict."""
    if not found.server_limited:
        return None
    figures = (
        f"over the {found.window_s:.3g} s after the first requests had time to finish it finished "
        f"{_rate(found.finished_rps)} requests/s of the {_rate(found.offered_rps)} that arrived, the number "
        f"in flight rose by {found.in_flight_rise} (peak {found.peak_in_flight}) and the median time in the "
        f"system from {_time(found.early_s)} (the first quarter of the requests) to {_time(found.late_s)} "
        "(the last)"
    )
    if client_limited:
        return (
            f"the server fell behind too ({figures}), but the client could not send on time, so the level "
            "is client-limited, not server-limited: the load offered was not the load asked for"
        )
    return (
        f"server-limited: the server did not keep up with the arrivals ({figures}): requests queued "
        "and the level's latencies include that wait; a lower --rate, or more capacity, is the server's "
        "pace"
    )


def _time(value: float | None) -> str:
    return "never ending" if value is None or not math.isfinite(value) else f"{value:.3g} s"


def _seconds(value: float | None) -> float | None:
    """A time for the record: None for one that never ended (JSON has no infinity)."""
    return None if value is None or not math.isfinite(value) else round(value, 4)


def _rate(value: float | None) -> str:
    value = value or 0.0
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _where(rec: dict) -> str:
    """A level as its finding names it: an open loop by its rate, a crowd by its size."""
    rate = rec.get(LEVEL.rate_rps)
    return f"{rate:g}/s" if rate else f"c={rec[LEVEL.concurrency]}"


def rules(labels: dict[str, dict[int, dict]]) -> list[tuple[str, str]]:
    """The check's rows (``harness.measure.curves.check``) for open loops and trace replays: WARN for a
    label with a level whose server did not keep up with the arrivals (``server_limited``: it
    measured a queue, not the rate asked), else PASS; a level where the server fell behind while
    the client was late too is named as the client's."""
    found = []
    for name, lv in labels.items():
        judged = [r for _, r in sorted(lv.items()) if "server_limited" in r]
        if not judged:
            continue
        limited = [r for r in judged if r["server_limited"]]
        both = [r for r in judged if not r["server_limited"] and r.get("server_note")]
        untold = [r for r in judged if not (r.get("backlog") or {}).get(BACKLOG.judged, True)]
        if limited:
            finding = (
                f"{name}: the server did not keep up with the arrivals at {', '.join(map(_where, limited))} "
                f"(server-limited; the first: {limited[0]['server_note']})"
            )
        else:
            finding = f"{name}: the server kept up with the arrivals at every open-loop level judged"
        if both:
            finding += (
                f"; at {', '.join(map(_where, both))} it fell behind too, but the client could not send on "
                "time there, so those levels are client-limited"
            )
        if untold:
            finding += f"; {', '.join(map(_where, untold))} too short to tell"
        found.append(("WARN" if limited else "PASS", finding))
    return found
