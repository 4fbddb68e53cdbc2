"""What the web UI shows of one test while it runs: pure functions of the exact samples.

The web UI's Exact tab, its timeline and its downloads are computed here from the samples of
the current test only (the caller clears them when a test starts or its statistics are reset),
with the same definitions as a sweep level (``level_stats``): output tokens/s over the test's
wall clock, nearest-rank percentiles, failures never in the latency distributions.
"""

from __future__ import annotations

from collections import Counter

from harness.measure.levels import level_stats, spread
from harness.records.level import STATS, Distribution
from harness.records.base import DEFAULT_OBJECTIVES
from harness.measure.sample import Sample

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

COLUMNS = ("metric", "value", *Distribution().to_dict())  # a distribution's keys: p50 ... mean
TIMELINE_FIELDS = (
    "t_s",
    "in_flight",
    STATS.output_tokens_per_s,  # the level record's figure, over the window
    "ttft_p50_s",
    "ttft_p95_s",
    "tpot_p50_s",
    "tpot_p95_s",
    "itl_p50_s",
    "itl_p95_s",
)


def failure_reason(error: str | None) -> str:
    """The kind of a failure: the error's text before its first colon (``HTTP 500``,
    ``ConnectionError``, ``IncompleteStream``)."""
    text = (error or "unknown").strip()
    return text.split(":", 1)[0].strip() or "unknown"


def failures_by_reason(samples: list[Sample]) -> dict[str, int]:
    return dict(Counter(failure_reason(s.error) for s in samples if not s.ok).most_common())


def state_text(locust_state: str, in_flight: int) -> str:
    """The test's state in words; after Stop, how many streams are still being read to the end."""
    if locust_state in ("cleanup", "stopping") and in_flight:
        return f"finishing {in_flight} stream{'s' if in_flight != 1 else ''}"
    return locust_state


def exact_rows(samples: list[Sample], wall_s: float, in_flight: int, locust_state: str) -> list[dict]:
    """The Exact tab's rows: counts and rates in ``value``, distributions in p50..mean."""
    st = level_stats(samples, 1, wall_s, DEFAULT_OBJECTIVES)

    def value(metric: str, v: object) -> dict:
        return {"metric": metric, "value": v, **dict.fromkeys(COLUMNS[2:], "")}

    def dist(metric: str, d: Distribution) -> dict:
        row = {"metric": metric, "value": ""}
        row.update({k: ("" if v is None else v) for k, v in d.to_dict().items()})
        return row

    rows = [
        value("state", state_text(locust_state, in_flight)),
        value("samples (finished requests)", st.requests),
        value("succeeded", st.completed),
        value("failed", st.failed),
        value("failure share (%)", round(100 * st.failed / st.requests, 1) if st.requests else 0.0),
        value("in flight now", in_flight),
        value("wall clock (s)", round(wall_s, 1)),
        value("output tokens", st.output_tokens),
        value("output tokens/s", st.output_tokens_per_s),
        value("requests/s (succeeded)", st.requests_per_s),
        dist("TTFT (s)", st.ttft_s),
        dist("TPOT (s)", st.tpot_s),
        dist("ITL (s)", st.itl_s),
        dist("client read lag (s)", st.client_read_lag_s),
    ]
    rows += [value(f"failed: {reason}", n) for reason, n in failures_by_reason(samples).items()]
    return rows


def phase_rows(
    phases: list[dict], samples: list[Sample], now: float, in_flight: int, state: str
) -> list[dict]:
    """The Exact tab's rows when the user count changed during the test: one block per phase
    (``phases``: ``start`` on the samples' clock and ``users``, in order), each phase's requests
    being those sent from its start to the next one's, its wall clock that span; metric names
    start with ``phase N (U users):``. One phase: the plain ``exact_rows``."""
    if len(phases) <= 1:
        start = phases[0]["start"] if phases else now
        return exact_rows(samples, max(now - start, 0.0), in_flight, state)
    rows: list[dict] = []
    spans = phase_spans(phases, samples, now)
    for n, (users, mine, wall) in enumerate(spans, 1):
        last = n == len(spans)
        block = exact_rows(mine, wall, in_flight if last else 0, state)
        if not last:
            block = [r for r in block if r["metric"] not in ("state", "in flight now")]
        prefix = f"phase {n} ({users} user{'' if users == 1 else 's'}): "
        rows += [{**r, "metric": prefix + r["metric"]} for r in block]
    return rows


def phase_spans(
    phases: list[dict], samples: list[Sample], now: float
) -> list[tuple[int, list[Sample], float]]:
    """Each phase's (user count, its requests: those sent from its start to the next phase's, its
    wall clock: that span, the last one ending ``now``), in order."""
    spans = []
    for n, phase in enumerate(phases, 1):
        end = now if n == len(phases) else phases[n]["start"]
        mine = [s for s in samples if phase["start"] <= s.t_send < end]
        spans.append((int(phase["users"]), mine, max(end - phase["start"], 0.0)))
    return spans


def timeline_point(samples: list[Sample], t0: float, now: float, window_s: float, in_flight: int) -> dict:
    """One point of the live charts: requests finished in the last ``window_s`` seconds (their
    output tokens per second over the window, TTFT, TPOT and ITL p50/p95) and the requests in
    flight."""
    span = max(min(window_s, now - t0), 1e-9)
    recent = [s for s in samples if s.ok and s.t_end is not None and now - span < s.t_end <= now]
    ttft = spread([s.ttft for s in recent if s.ttft is not None], 4)
    tpot = spread([s.tpot for s in recent if s.tpot is not None], 5)
    itl = spread([gap for s in recent for gap in s.itl], 5)
    tokens_per_s = round(sum(s.output_tokens or 0 for s in recent) / span, 1)
    values = (
        round(now - t0, 1),
        in_flight,
        tokens_per_s,
        ttft.p50,
        ttft.p95,
        tpot.p50,
        tpot.p95,
        itl.p50,
        itl.p95,
    )
    return dict(zip(TIMELINE_FIELDS, values, strict=True))  # the names in TIMELINE_FIELDS' order


def csv_text(rows: list[dict], columns: tuple[str, ...]) -> str:
    """Rows as CSV (no quoting needed beyond commas in text, which are replaced)."""

    def cell(v: object) -> str:
        return "" if v is None else str(v).replace(",", ";")

    lines = [",".join(columns)] + [",".join(cell(r.get(c)) for c in columns) for r in rows]
    return "\n".join(lines) + "\n"


def failing_streak(samples: list[Sample], users: int, min_span_s: float = 2.0) -> str | None:
    """Why the web UI should stop sending, or None: every request that finished in the last
    ``min_span_s`` seconds or more failed (at least ``max(10, 2 x users)`` of them in a row), or so
    many in a row failed (``max(200, 10 x users)``: a refusing port fails thousands a second) that
    waiting longer would only add failures. ``samples`` in the order they finished."""
    n = 0
    for s in reversed(samples):
        if s.ok:
            break
        n += 1
    if n == 0:
        return None
    streak = samples[-n:]
    ends = [s.t_end for s in streak if s.t_end is not None]
    span = (max(ends) - min(ends)) if ends else 0.0
    if n >= max(200, 10 * users) or (n >= max(10, 2 * users) and span >= min_span_s):
        return (
            f"stopped sending: the last {n} requests all failed, over {span:.1f} s "
            f"(last: {failure_text(streak[-1].error)}); fix the server or the form, then start again"
        )
    return None


def failure_text(error: str | None) -> str:
    """An error's first line, cut to 160 characters."""
    return ((error or "unknown").strip().splitlines() or ["unknown"])[0][:160]
