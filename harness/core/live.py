"""What the web UI shows of one test while it runs: pure functions of the exact samples.

The web UI's Exact tab, its timeline and its downloads are computed here from the samples of
the current test only (the caller clears them when a test starts or its statistics are reset),
with the same definitions as a sweep level (``level_stats``): output tokens/s over the test's
wall clock, nearest-rank percentiles, failures never in the latency distributions.
"""

from __future__ import annotations

from collections import Counter

from harness.core.levels import level_stats, spread
from harness.core.records import DEFAULT_OBJECTIVES, Distribution
from harness.core.stream import Sample

COLUMNS = ("metric", "value", "p50", "p90", "p95", "p99", "mean")
TIMELINE_FIELDS = (
    "t_s",
    "in_flight",
    "output_tokens_per_s",
    "ttft_p50_s",
    "ttft_p95_s",
    "tpot_p50_s",
    "tpot_p95_s",
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
        return {"metric": metric, "value": v, "p50": "", "p90": "", "p95": "", "p99": "", "mean": ""}

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


def timeline_point(samples: list[Sample], t0: float, now: float, window_s: float, in_flight: int) -> dict:
    """One point of the live charts: requests finished in the last ``window_s`` seconds (their
    output tokens per second over the window, TTFT and TPOT p50/p95) and the requests in flight."""
    span = max(min(window_s, now - t0), 1e-9)
    recent = [s for s in samples if s.ok and s.t_end is not None and now - span < s.t_end <= now]
    ttft = spread([s.ttft for s in recent if s.ttft is not None], 4)
    tpot = spread([s.tpot for s in recent if s.tpot is not None], 5)
    return {
        "t_s": round(now - t0, 1),
        "in_flight": in_flight,
        "output_tokens_per_s": round(sum(s.output_tokens or 0 for s in recent) / span, 1),
        "ttft_p50_s": ttft.p50,
        "ttft_p95_s": ttft.p95,
        "tpot_p50_s": tpot.p50,
        "tpot_p95_s": tpot.p95,
    }


def csv_text(rows: list[dict], columns: tuple[str, ...]) -> str:
    """Rows as CSV (no quoting needed beyond commas in text, which are replaced)."""

    def cell(v: object) -> str:
        return "" if v is None else str(v).replace(",", ";")

    lines = [",".join(columns)] + [",".join(cell(r.get(c)) for c in columns) for r in rows]
    return "\n".join(lines) + "\n"
