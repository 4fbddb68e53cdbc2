"""Level aggregates from hand-made samples: the client's read lag and the client-limit verdict."""

from __future__ import annotations

from harness.measure.levels import aggregate, client_limited, level_record
from harness.measure.sample import Sample


def _sample(lags, clock="kernel", times=None):
    times = times or [0.05 + 0.01 * i for i in range(10)]
    return Sample(
        t_send=0.0,
        ok=True,
        t_first=times[0],
        t_end=times[-1],
        token_times=times,
        output_tokens=10,
        token_source="usage",
        finish_reason="length",
        clock=clock,
        read_lags=lags,
    )


def test_read_lag_is_a_distribution_over_every_token():
    # 10 requests of 10 tokens: lags 0.1 ms .. 10 ms, one per token; tokens 10 ms apart
    row = aggregate(
        [_sample([0.0001 * (10 * r + i + 1) for i in range(10)]) for r in range(10)], 4, 1.0, 2.0, 0.1
    )
    assert row["client_read_lag_s"]["p50"] == 0.005
    assert row["client_read_lag_s"]["p99"] == 0.0099
    assert row["itl_s"]["p50"] == 0.01
    assert row["client_late_share"] == 0.0  # none waited a whole gap


def test_late_share_counts_tokens_read_a_whole_gap_late():
    lags = [0.0005] * 95 + [0.012] * 5  # five of a hundred tokens read after the next one came
    row = aggregate([_sample(lags[10 * r : 10 * r + 10]) for r in range(10)], 4, 1.0, 2.0, 0.1)
    assert row["client_late_share"] == 0.05


def test_read_lag_is_none_where_nothing_was_stamped():
    row = aggregate([_sample([], clock="read") for _ in range(5)], 1, 1.0, 2.0, 0.1)
    assert row["client_read_lag_s"]["p50"] is None and row["client_read_lag_s"]["p99"] is None
    assert row["client_late_share"] is None


def test_client_is_the_limit_once_its_late_tokens_would_reach_the_p99():
    assert not client_limited(0.5, 64.0, 64, 0.0)
    assert not client_limited(0.5, 64.0, 64, 0.002)  # 0.2 %: well clear of the p99 gap
    assert client_limited(0.5, 64.0, 64, 0.003)  # named at half of what would reach the p99


def test_without_stamps_the_labs_sign_decides():
    assert client_limited(0.95, 150.0, 256, None)  # full core, in flight well under c
    assert not client_limited(0.95, 250.0, 256, None)  # full core but the load held
    assert not client_limited(0.5, 100.0, 256, None)


def test_late_first_tokens_are_their_own_sign_because_they_spoil_the_ttft_p99():
    # 100 requests, every later token in time; 2 first tokens read a whole gap late (2 %)
    samples = [_sample([0.02 if r < 2 else 0.0005] + [0.0005] * 9) for r in range(100)]
    row = aggregate(samples, 64, 1.0, 2.0, 0.1)
    assert row["client_late_share"] == 0.002  # 2 of 1,000 tokens: well clear of the ITL p99
    assert row["client_first_late_share"] == 0.02
    assert not client_limited(0.5, 64.0, 64, row["client_late_share"])
    assert client_limited(0.5, 64.0, 64, row["client_late_share"], row["client_first_late_share"])
    assert not client_limited(0.5, 64.0, 64, 0.0, 0.004)  # 0.4 %: well clear of the p99 TTFT
    assert client_limited(0.5, 64.0, 64, 0.0, 0.006)


def test_the_ttft_runs_from_the_departure_and_the_send_delay_is_kept_apart():
    s = _sample([0.0005] * 10)
    s.t_sent = 0.004  # connecting and writing took the client 4 ms
    assert s.ttft == 0.05 - 0.004 and s.send_delay == 0.004
    row = aggregate([s], 1, 1.0, 2.0, 0.1)
    assert row["ttft_s"]["p50"] == 0.046 and row["client_send_delay_s"]["p50"] == 0.004
    unknown = _sample([0.0005] * 10)  # a sample without a departure time: from the send, as before
    assert unknown.ttft == 0.05 and unknown.send_delay is None


def test_output_length_distribution_is_recorded_per_level():
    """Requests that stop early (a stop token) and at the limit: nearest-rank over completed requests;
    a failed request does not enter it."""
    from dataclasses import replace

    lengths = [3, 5, 8, 10, 10, 10, 10, 10, 10, 10]
    ok = [replace(_sample([]), output_tokens=n) for n in lengths]
    failed = replace(_sample([]), ok=False, error="HTTP 500", output_tokens=999)
    row = aggregate([*ok, failed], 4, 1.0, 2.0, 0.1)
    assert row["output_tokens_dist"] == {"p50": 10.0, "p90": 10.0, "p95": 10.0, "p99": 10.0, "mean": 8.6}
    assert aggregate(ok[:3], 4, 1.0, 2.0, 0.1)["output_tokens_dist"]["p50"] == 5.0
    assert aggregate([failed], 4, 1.0, 2.0, 0.1)["output_tokens_dist"]["p50"] is None


def test_a_client_far_behind_is_named_even_when_most_gaps_are_merged_to_zero():
    # tokens mostly merged in pairs: half the gaps are 0, the rest 20 ms; every read 30 ms late
    times = [0.05 + 0.02 * (i // 2) for i in range(10)]
    late = [_sample([0.03] * 10, times=times) for _ in range(10)]
    row = aggregate(late, 1000, 1.0, 2.0, 0.1)
    assert row["itl_s"]["p50"] == 0.0  # the plain median gap: zero, so it cannot be the yardstick
    assert row["client_late_share"] == 1.0 and row["client_first_late_share"] == 1.0


def test_the_record_of_a_client_limited_level_says_by_how_much():
    from harness.records.level import LevelContext
    from harness.records.base import DEFAULT_OBJECTIVES

    context = LevelContext("t", "e", "m", "http://x", "mixed", 128, 0.0, DEFAULT_OBJECTIVES)
    lags = [0.0005] * 95 + [0.012] * 5  # 5 % of tokens read after the next had come
    late = [_sample(lags[10 * r : 10 * r + 10]) for r in range(10)]
    record = level_record(late, 4, 1.0, context, "now", client_cpu=0.97).to_dict()
    assert record["client_limited"]
    note = record["client_limit_note"]
    assert "5.00% of tokens read a token gap late (bound 0.25 %)" in note
    assert "read lag p99 12.0 ms (first tokens 0.5 ms)" in note
    in_time = [_sample([0.0005] * 10) for _ in range(10)]
    record = level_record(in_time, 4, 1.0, context, "now", client_cpu=0.5).to_dict()
    assert not record["client_limited"] and "client_limit_note" not in record
    full = [_sample([], clock="read") for _ in range(10)]  # no stamps (TLS): the full core alone
    record = level_record(full, 400, 1.0, context, "now", client_cpu=0.97).to_dict()
    assert record["client_limit_note"] == "a full core (97%) with 1.4 of 400 in flight"
