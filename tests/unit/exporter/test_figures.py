"""The client's figures for Prometheus from exact samples: buckets by hand, and the totals equal
to the level record's own counts built from the same samples."""

from __future__ import annotations

import pytest

from harness.measure.levels import level_stats
from harness.records.base import DEFAULT_OBJECTIVES
from harness.measure.sample import Sample
from harness.exporter import figures as f


def _ok(t_send: float, first: float, gaps: list[float], tokens: int | None = None) -> Sample:
    times = [first]
    for gap in gaps:
        times.append(times[-1] + gap)
    n = tokens if tokens is not None else len(times)
    return Sample(t_send, ok=True, t_first=first, t_end=times[-1] + 0.001, token_times=times, output_tokens=n)


SAMPLES = [
    _ok(0.0, 0.05, [0.01, 0.01, 0.02]),  # TTFT 0.05 (on a bound), TPOT 0.04 / 3
    _ok(0.1, 0.4, [0.03]),  # TTFT 0.3
    _ok(0.2, 0.2 + 100.0, []),  # TTFT 100 s: past the last bound but one; one token, no TPOT
    Sample(0.3, error="HTTPError 500", t_end=0.5),
    Sample(0.0, t_end=9.0, error="Cancelled: still in flight at the level's bound of 9 s"),
]


def test_a_value_on_a_bound_falls_in_that_bucket_and_the_counts_run_up():
    h = f.Histogram((0.1, 1.0))
    for v in (0.1, 0.5, 1.0, 7.0):
        h.observe(v)
    assert h.counts == [1, 2, 1] and h.count == 4 and h.total == pytest.approx(8.6)
    assert h.cumulative() == [("0.1", 1), ("1.0", 3), ("+Inf", 4)]


def test_failed_requests_are_counted_and_never_timed():
    got = f.figures_of(SAMPLES)
    assert (got.completed, got.failed, got.output_tokens) == (3, 2, 4 + 2 + 1)
    assert got.ttft.count == 3 and got.ttft.total == pytest.approx(0.05 + 0.3 + 100.0)
    assert got.ttft.cumulative()[3] == ("0.05", 1)  # 0.05 s lands on its bound
    assert got.ttft.cumulative()[-2] == ("160.0", 3)
    assert got.tpot.count == 2  # a one-token answer has no TPOT
    assert got.itl.count == 4 and got.itl.total == pytest.approx(0.07)


def test_the_totals_equal_the_level_records_counts_from_the_same_samples():
    stats = level_stats(SAMPLES, 2, 10.0, DEFAULT_OBJECTIVES)
    got = f.figures_of(SAMPLES)
    assert got.completed == stats.completed and got.failed == stats.failed
    assert got.output_tokens == stats.output_tokens
    assert got.ttft.total / got.ttft.count == pytest.approx(stats.ttft_s.mean, abs=1e-4)
    assert got.itl.total / got.itl.count == pytest.approx(stats.itl_s.mean, abs=1e-5)


def test_every_name_carries_its_unit_and_has_its_help():
    names = [
        f.IN_FLIGHT,
        f.COMPLETED,
        f.FAILED,
        f.OUTPUT_TOKENS,
        f.TTFT,
        f.TPOT,
        f.ITL,
        f.LEVEL_USERS,
        f.LEVEL_RATE,
    ]
    assert set(names) == set(f.HELP)
    assert all(n.startswith("harness_client_") for n in names)
    assert all(n.endswith(("_seconds", "_requests", "_tokens", "_users", "_per_second")) for n in names)
