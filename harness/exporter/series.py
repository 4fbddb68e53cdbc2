"""The server's ``/metrics`` readings of one level and the client's own figures at the same
instants, side by side: the level record's ``series``. The client's figures are read from the
exact samples (what was in flight, what had ended, its output tokens), so they are the live
collector's (``harness.exporter.figures``) at that instant within the level.

Both sides must be on one clock: the sampler's stamps and the samples' times are this process's
monotonic clock (a level whose samples came from other hosts has no series)."""

from __future__ import annotations

import math

from bisect import bisect_right

from harness.measure.sample import Sample
from harness.measure.tally import LevelTally
from harness.schema_facts import KeyNames

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

MAX_POINTS = 120  # a longer level keeps evenly spaced readings: a record line stays small
CLIENT = ("in_flight_requests", "completed_requests", "failed_requests", "output_tokens")
# the families each engine names for one thing: requests being decoded, requests waiting, output
# tokens made (a counter); the report lays the client's figure beside the first one present
RUNNING = ("llamacpp:requests_processing", "vllm:num_requests_running")
WAITING = ("llamacpp:requests_deferred", "vllm:num_requests_waiting")
GENERATED = ("llamacpp:tokens_predicted_total", "vllm:generation_tokens_total")

# The level record's ``series`` (``series_part``), declared once beside its builder.
SERIES_SCHEMA: dict = {
    "type": "object",
    "description": (
        "added: the server's /metrics readings during the level and the client's own figures at"
        " the same instants (harness.exporter.series): seconds from the level's start; each "
        "server family's value (a counter's rise since the first reading); the client's "
        "requests in flight, completed and failed requests, and the completed ones' output "
        "tokens"
    ),
    "required": ["t_s", "server", "client"],
    "additionalProperties": False,
    "properties": {
        "t_s": {"type": "array", "minItems": 2, "items": {"type": "number", "minimum": 0}},
        "server": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": ["number", "null"]}},
        },
        "client": {
            "type": "object",
            "required": list(CLIENT),
            "additionalProperties": False,
            "properties": {
                name: {"type": "array", "items": {"type": "integer", "minimum": 0}} for name in CLIENT
            },
        },
    },
}


SERIES = KeyNames(*SERIES_SCHEMA["properties"])  # its keys, for every reader


def _thin(readings: list[tuple[float, dict]], most: int) -> list[tuple[float, dict]]:
    if len(readings) <= most:
        return readings
    step = (len(readings) - 1) / (most - 1)
    return [readings[round(i * step)] for i in range(most)]


def client_at(level: list[Sample] | LevelTally, instants: list[float]) -> dict[str, list[int]]:
    """At each instant: requests in flight (departed, not ended), completed and failed requests
    ended by then, and the output tokens of the completed ones. ``level`` is its samples, or its
    tally (whose timeline columns hold the same three facts of every request)."""
    tally = level if isinstance(level, LevelTally) else LevelTally.of(level)
    departed = sorted(tally.col("t_departed"))
    ended = sorted(
        (t, tokens)
        for t, tokens in zip(tally.col("t_end"), tally.col("ok_tokens"), strict=True)
        if not math.isnan(t)
    )
    end_times = [t for t, _ in ended]
    ok_so_far, failed_so_far, tokens_so_far = [0], [0], [0]
    for _, tokens in ended:  # running counts, so each instant is two bisections
        ok_so_far.append(ok_so_far[-1] + (tokens >= 0))
        failed_so_far.append(failed_so_far[-1] + (tokens < 0))
        tokens_so_far.append(tokens_so_far[-1] + int(max(tokens, 0)))
    out: dict[str, list[int]] = {name: [] for name in CLIENT}
    for t in instants:
        n_ended = bisect_right(end_times, t)
        out["in_flight_requests"].append(bisect_right(departed, t) - n_ended)
        out["completed_requests"].append(ok_so_far[n_ended])
        out["failed_requests"].append(failed_so_far[n_ended])
        out["output_tokens"].append(tokens_so_far[n_ended])
    return out


def series_part(readings: list[tuple[float, dict]], samples: list[Sample] | LevelTally) -> dict | None:
    """The level's ``series``: seconds from the level's start (its first departure or reading),
    each server family's value (a counter's rise since the first reading) and the client's
    figures, at each reading; None without two readings or without samples."""
    readings = _thin(sorted(readings, key=lambda r: r[0]), MAX_POINTS)
    if len(readings) < 2 or not len(samples):
        return None
    departed = (
        samples.col("t_departed") if isinstance(samples, LevelTally) else [s.t_departed for s in samples]
    )
    t0 = min(readings[0][0], min(departed))
    instants = [t for t, _ in readings]
    names = sorted({name for _, values in readings for name in values})
    server: dict[str, list] = {}
    for name in names:
        first = next(v[name] for _, v in readings if name in v)
        base = first if name.endswith("_total") else 0.0
        server[name] = [None if name not in v else round(v[name] - base, 3) for _, v in readings]
    return {
        SERIES.t_s: [round(t - t0, 3) for t in instants],
        SERIES.server: server,
        SERIES.client: client_at(samples, instants),
    }


def first_of(names: tuple[str, ...], server: dict) -> str | None:
    """The first of ``names`` the server's series holds."""
    return next((n for n in names if n in server), None)


def rate(t_s: list[float], totals: list) -> float | None:
    """A running total's rise per second from its first to its last known value."""
    known = [(t, v) for t, v in zip(t_s, totals, strict=True) if v is not None]
    if len(known) < 2 or known[-1][0] <= known[0][0]:
        return None
    return (known[-1][1] - known[0][1]) / (known[-1][0] - known[0][0])


def side_by_side(series: dict) -> dict:
    """One level's series in a few figures: the client's mean in flight beside the server's mean
    running and peak waiting, and each side's output tokens per second over the readings."""
    t, server, client = series[SERIES.t_s], series[SERIES.server], series[SERIES.client]
    running, waiting, made = (first_of(n, server) for n in (RUNNING, WAITING, GENERATED))

    def mean(values: list) -> float | None:
        known = [v for v in values if v is not None]
        return round(sum(known) / len(known), 2) if known else None

    return {
        "readings": len(t),
        "client_in_flight": mean(client["in_flight_requests"]),
        "server_running": mean(server[running]) if running else None,
        "server_waiting_peak": max((v for v in server[waiting] if v is not None), default=None)
        if waiting
        else None,
        "client_tokens_per_s": _round(rate(t, client["output_tokens"])),
        "server_tokens_per_s": _round(rate(t, server[made])) if made else None,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
