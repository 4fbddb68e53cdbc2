"""The web UI's exact table and timeline points, from constructed samples."""

from __future__ import annotations

from harness.load.live import (
    csv_text,
    exact_rows,
    failure_reason,
    failures_by_reason,
    state_text,
    timeline_point,
)
from harness.measure.sample import Sample


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


def test_phases_split_the_figures_at_each_change_of_user_count():
    from harness.load.live import phase_rows

    samples = [ok(0.0, 0.1, 0.02, 11), ok(1.0, 0.1, 0.02, 11), ok(5.0, 0.5, 0.05, 11)]
    phases = [{"start": 0.0, "users": 8}, {"start": 4.0, "users": 2}]
    rows = rows_by_metric(phase_rows(phases, samples, 6.0, 2, "running"))
    assert rows["phase 1 (8 users): samples (finished requests)"]["value"] == 2
    assert rows["phase 1 (8 users): wall clock (s)"]["value"] == 4.0
    assert rows["phase 2 (2 users): samples (finished requests)"]["value"] == 1
    assert rows["phase 2 (2 users): TTFT (s)"]["p50"] == 0.5
    assert rows["phase 2 (2 users): in flight now"]["value"] == 2
    assert "phase 1 (8 users): state" not in rows and rows["phase 2 (2 users): state"]["value"] == "running"
    one = rows_by_metric(phase_rows(phases[:1], samples, 6.0, 2, "running"))
    assert one["samples (finished requests)"]["value"] == 3 and one["wall clock (s)"]["value"] == 6.0


def test_phase_spans_give_each_user_count_its_own_requests_and_wall_clock():
    from harness.load.live import phase_spans

    samples = [ok(0.0, 0.1, 0.02, 11), ok(3.9, 0.1, 0.02, 11), ok(4.0, 0.5, 0.05, 11)]
    spans = phase_spans([{"start": 0.0, "users": 8}, {"start": 4.0, "users": 2}], samples, 6.5)
    assert [(users, [s.t_send for s in mine], wall) for users, mine, wall in spans] == [
        (8, [0.0, 3.9], 4.0),
        (2, [4.0], 2.5),
    ]


def test_a_failing_streak_stops_the_load_only_when_every_recent_request_failed():
    from harness.load.live import failing_streak

    good = [ok(0.0, 0.1, 0.02, 11)]
    # 2 users, 10 failures over 2.5 s: stop, naming the last error
    slow = [failed(0.25 * i, "HTTP 404: The model `x` does not exist.") for i in range(11)]
    why = failing_streak(good + slow, users=2)
    assert why and why.startswith("stopped sending: the last 11 requests all failed, over 2.5 s")
    assert "(last: HTTP 404: The model `x` does not exist.)" in why
    # a burst of refused connections in a fraction of a second: stop on the count alone
    burst = [failed(0.001 * i, "ConnectionRefusedError: refused") for i in range(200)]
    assert failing_streak(good + burst, users=2)
    assert failing_streak(good + burst[:199], users=2) is None
    # one success at the end, a short streak or a streak of under 2 s: keep going
    assert failing_streak(slow + good, users=2) is None
    assert failing_streak(good + slow[:5], users=2) is None
    assert failing_streak(good + [failed(0.01 * i, "HTTP 500: x") for i in range(50)], users=2) is None
    assert failing_streak([], users=2) is None
