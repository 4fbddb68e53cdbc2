"""The bounds every request runs under, and the checks every numeric option passes before anything
starts (pure: no clock, no I/O).

A request has two bounds, both enforced by every command that talks to a server:

* ``total_s``: the whole request, from sending it to the last byte (headers, body, every token);
* ``idle_s``: the longest gap with no byte from the server (the wait for the headers included).

A server that never answers, or trickles one byte at a time, ends at the first bound it passes,
and the sample's error says which (``Timeout: ...``).
"""

from __future__ import annotations

import math
from typing import Any
from dataclasses import dataclass

from harness.errors import ConfigError

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it
MAX_CALLS = 64  # calls one answer may make, past which a delta is no call

# Limits on options, checked before anything starts. Each is far above any sensible run and low
# enough that a typo cannot take the machine's memory or hang the start.
MAX_CONCURRENCY = 10_000  # Locust users in one process (each holds a greenlet and a connection)
MAX_REQUESTS = 1_000_000
MAX_RATE_RPS = 10_000.0
MAX_SECONDS = 7 * 24 * 3600.0  # timeouts and durations: a week
MAX_TOKENS = 1_000_000
MAX_REPETITIONS = 1_000


@dataclass(frozen=True)
class Bounds:
    """How long one request may take in all (``total_s``) and without a byte (``idle_s``)."""

    total_s: float
    idle_s: float

    @classmethod
    def of(cls, total_s: float, idle_s: float | None = None) -> Bounds:
        """Checked bounds; the idle bound defaults to the total one and never exceeds it."""
        total = seconds("--timeout", total_s)
        idle = total if idle_s is None else seconds("--idle-timeout", idle_s)
        return cls(total, min(idle, total))

    def describe(self) -> str:
        return f"{self.total_s:g} s in all, {self.idle_s:g} s without a byte"


def crowd_timeout(total_s: float, per_user_s: float | None, users: int) -> float:
    """The total bound of each request at a closed level of ``users`` users: ``total_s``, or
    ``users`` x ``per_user_s`` when that is longer (``--timeout-per-user``). In a closed loop a
    request may queue behind every other user's for a seat, so on a slow server its time grows with
    the crowd: a fixed bound that fits c = 1 drops requests at c = 20 that were only waiting."""
    return max(total_s, users * per_user_s) if per_user_s else total_s


def number(name: str, value: Any, low: float, high: float, whole: bool = False) -> Any:
    """``value`` when it is a finite number in [low, high] (a whole one if ``whole``), else one
    ConfigError line saying what the option takes."""
    kind = "a whole number" if whole else "a number"
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok and not whole and not math.isfinite(value):
        ok = False
    if ok and whole and isinstance(value, float):
        ok = value.is_integer()
    if not ok or not (low <= value <= high):
        raise ConfigError(f"{name} takes {kind} from {_plain(low)} to {_plain(high)}, got {value!r}")
    return int(value) if whole else float(value)


def port(name: str, value: Any) -> int:
    """A TCP port: a whole number from 1 to 65535 (ConfigError, one line, otherwise)."""
    return int(number(name, value, 1, 65535, whole=True))


def _plain(limit: float) -> str:
    """A limit as people write it: 1000000, not 1e+06."""
    return f"{limit:.0f}" if float(limit).is_integer() else f"{limit:g}"


def seconds(name: str, value: Any) -> float:
    """A positive, finite number of seconds, at most a week."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
        raise ConfigError(f"{name} takes a positive number of seconds, got {value!r}")
    return float(number(name, value, 1e-3, MAX_SECONDS))


MAX_PEAK = 10_000_000  # people at once a deployment is sized for
MAX_SPARES = 10.0  # spare share of the copies: ten times as many again


def sizing(promise: Any, peak: Any, spares: Any) -> None:
    """The sizing options of summarise, capacity and the demo (``--promise`` in seconds where it is
    one, ``--peak`` people, ``--spares`` a share of the copies) in range, before anything is read
    or sent: NaN spares were a traceback after a whole search, negative ones 0 copies."""
    if promise is not None:
        seconds("--promise", promise)
    if peak is not None:
        number("--peak", peak, 1, MAX_PEAK, whole=True)
    number("--spares", spares, 0, MAX_SPARES)


def whole_list(name: str, text: str, low: int, high: int) -> list[int]:
    """Comma-separated whole numbers, each in [low, high]."""
    try:
        values = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"{name} must be comma-separated whole numbers, got {text!r}") from None
    if not values:
        raise ConfigError(f"{name} lists no value: {text!r}")
    return [number(name, v, low, high, whole=True) for v in values]


def number_list(name: str, text: str, low: float, high: float) -> list[float]:
    """Comma-separated finite numbers, each in [low, high]."""
    try:
        values = [float(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"{name} must be comma-separated numbers, got {text!r}") from None
    if not values:
        raise ConfigError(f"{name} lists no value: {text!r}")
    return [number(name, v, low, high) for v in values]
