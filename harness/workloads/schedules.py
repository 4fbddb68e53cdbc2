"""Load shapes, pure: open-loop arrival schedules (seeded, a generator per schedule, never the
global one), how far a client kept to one, and how a level's requests are split over Locust
workers.

Bursts follow ``vllm bench serve --burstiness`` and AIPerf: inter-arrival gaps are gamma
distributed with shape K and scale 1 / (rate x K), so the mean gap stays 1 / rate whatever K is
and the gaps' coefficient of variation is 1 / sqrt(K): K = 1 is Poisson (exponential gaps),
K < 1 burstier, K > 1 more even.
"""

from __future__ import annotations

import math
import random
import statistics

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


def arrival_offsets(
    rate: float, count: int, poisson: bool, seed: int = 1, burstiness: float | None = None
) -> list[float]:
    """Send times (seconds from the start) of ``count`` requests at ``rate`` per second: evenly
    spaced, Poisson arrivals (exponential gaps), or, with ``burstiness`` K, gamma gaps of shape K
    (K = 1 is Poisson), each from a seeded generator of its own. The first request leaves at 0."""
    if not (isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0):
        raise ValueError(f"rate must be a positive finite number, got {rate!r}")
    if burstiness is not None and not (math.isfinite(burstiness) and burstiness > 0):
        raise ValueError(f"burstiness must be a positive finite number, got {burstiness!r}")
    if not poisson and burstiness is None:
        return [i / rate for i in range(count)]
    rng, t, out = random.Random(seed), 0.0, []
    for _ in range(count):
        out.append(t)
        if burstiness is None:
            t += rng.expovariate(rate)  # the Poisson schedule earlier sweeps drew, gap for gap
        else:
            t += rng.gammavariate(burstiness, 1.0 / (rate * burstiness))
    return out


def gaps(times: list[float]) -> list[float]:
    """The gaps between consecutive times, in time order."""
    ordered = sorted(times)
    return [b - a for a, b in zip(ordered, ordered[1:], strict=False)]


def coefficient_of_variation(values: list[float]) -> float | None:
    """Standard deviation over mean (population), None for fewer than two values or a zero mean:
    1 for exponential gaps, 1 / sqrt(K) for gamma gaps of shape K, 0 for even ones."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if mean <= 0:
        return None
    return statistics.pstdev(values) / mean


def expected_cv(burstiness: float | None, poisson: bool) -> float:
    """The coefficient of variation the schedule's gaps are drawn with (0 for even spacing)."""
    if burstiness is not None:
        return 1.0 / math.sqrt(burstiness)
    return 1.0 if poisson else 0.0


def lateness(due: float, departed: float) -> float:
    """How late a request left against its schedule, seconds (negative: early, which the open
    loop never is by design, so a negative value is the clock's own rounding)."""
    return departed - due


# How the open loop waits for a departure (``harness.load.departures``): it sleeps to a margin
# short of the due time, then yields to the other greenlets (their reads go on) until SPIN_S short
# of it, then spins. The margin is what the sleep may wake up late by: gevent's own timers wake up
# to about a millisecond late (libev's epoll waits whole milliseconds), so SLEEP_MARGIN_S with
# them; a timerfd (``harness.load.wakeup``, Linux) wakes up within tens of microseconds, less the
# loop's own delays (another stream's read running), so PRECISE_MARGIN_S with it.
SLEEP_MARGIN_S = 0.002
PRECISE_MARGIN_S = 0.0005
SPIN_S = 0.0002


def wait_step(
    now: float, due: float, sleep_margin: float = SLEEP_MARGIN_S, spin: float = SPIN_S
) -> tuple[str, float]:
    """What to do next to leave at ``due``: ("go", 0) once it has come; ("sleep", s) while it is
    more than ``sleep_margin`` away (s: to that margin); ("yield", 0) while more than ``spin``
    away (let other greenlets run, then look again); ("spin", 0) for the last ``spin`` seconds
    (nothing else runs, so no one else's work makes the departure late)."""
    left = due - now
    if left <= 0:
        return "go", 0.0
    if left > sleep_margin:
        return "sleep", left - sleep_margin
    if left > spin:
        return "yield", 0.0
    return "spin", 0.0


def shares(count: int, users: dict[str, int]) -> dict[str, int]:
    """Split a level's ``count`` requests over workers in proportion to their users (exact total)."""
    total = sum(users.values())
    if total <= 0:
        return {k: 0 for k in users}
    out = {k: count * u // total for k, u in users.items()}
    leftover = count - sum(out.values())
    for k in sorted(users, key=lambda k: -users[k])[:leftover]:
        out[k] += 1
    return out
