"""The web UI's exact table and timeline points, from constructed samples."""

from __future__ import annotations

from harness.core.live import (
    csv_text,
    exact_rows,
    failure_reason,
    failures_by_reason,
    state_text,
    timeline_point,
)
from harness.core.stream import Sample


def ok(t_send: float, ttft: float, gap: float, tokens: int) -> Sample:
    times = [t_send + ttft + i * gap for i in range(tokens)]
    return Sample(
        t_send=t_send,
        ok=True,
        t_first=times[0],
        t_end=times[-1],
        token_times=times,
        output_tokens=tokens,
        token_source="usage",
        finish_reason="length",
        saw_done=True,
    )


def failed(t_send: float, error: str) -> Sample:
    return Sample(t_send=t_send, ok=False, error=error, t_end=t_send + 0.01)


def rows_by_metric(rows):
    return {r["metric"]: r for r in rows}


def test_exact_rows_count_rate_percentiles_and_failures_by_reason():
    samples = [ok(0.0, 0.1, 0.02, 11), ok(1.0, 0.3, 0.04, 11)] + [
        failed(2.0, "HTTP 500: boom"),
        failed(2.5, "HTTP 500: again"),
        failed(3.0, "ConnectionError: refused"),
    ]
    rows = rows_by_metric(exact_rows(samples, 4.0, 3, "running"))
    assert rows["samples (finished requests)"]["value"] == 5
    assert rows["succeeded"]["value"] == 2 and rows["failed"]["value"] == 3
    assert rows["failure share (%)"]["value"] == 60.0
    assert rows["output tokens/s"]["value"] == 22 / 4.0
    assert rows["TTFT (s)"]["p50"] == 0.1 and rows["TTFT (s)"]["p95"] == 0.3
    assert rows["TPOT (s)"]["p50"] == 0.02 and rows["ITL (s)"]["p99"] == 0.04
    assert rows["failed: HTTP 500"]["value"] == 2 and rows["failed: ConnectionError"]["value"] == 1
    assert rows["in flight now"]["value"] == 3 and rows["state"]["value"] == "running"


def test_no_samples_gives_empty_cells_not_none():
    rows = exact_rows([], 0.0, 0, "ready")
    assert all(v is not None for r in rows for v in r.values())
    assert rows_by_metric(rows)["output tokens/s"]["value"] == 0.0


def test_state_after_stop_names_the_streams_still_finishing():
    assert state_text("cleanup", 3) == "finishing 3 streams"
    assert state_text("stopping", 1) == "finishing 1 stream"
    assert state_text("cleanup", 0) == "cleanup" and state_text("running", 5) == "running"


def test_failure_reason_is_the_text_before_the_colon():
    assert failure_reason("IncompleteStream: no [DONE]") == "IncompleteStream"
    assert failure_reason(None) == "unknown"
    assert failures_by_reason([failed(0, "HTTP 429: slow down"), ok(0, 0.1, 0.01, 3)]) == {"HTTP 429": 1}


def test_timeline_point_uses_requests_finished_in_the_window():
    old = ok(0.0, 0.1, 0.01, 10)  # ends at 0.19
    recent = [ok(20.0, 0.2, 0.01, 51), ok(21.0, 0.4, 0.01, 51)]  # end at 20.7 and 21.9
    point = timeline_point([old, *recent], t0=0.0, now=25.0, window_s=10.0, in_flight=4)
    assert point["output_tokens_per_s"] == 10.2 and point["in_flight"] == 4
    assert point["ttft_p50_s"] == 0.2 and point["ttft_p95_s"] == 0.4 and point["t_s"] == 25.0


def test_csv_has_a_header_and_one_line_per_row():
    text = csv_text([{"a": 1, "b": None}, {"a": "x,y", "b": 2}], ("a", "b"))
    assert text.splitlines() == ["a,b", "1,", "x;y,2"]
