"""A level accounts for every request it asked for (the issue's `ok 9/9` when 12 were asked)."""

from harness.measure.levels import level_stats
from harness.records.base import DEFAULT_OBJECTIVES
from harness.measure.sample import Sample
from harness.measure.levels import LEVEL_SLACK_S, account, level_bound


def done(i: int) -> Sample:
    return Sample(
        t_send=float(i), ok=True, t_first=i + 0.1, t_end=i + 1.0, output_tokens=3, token_times=[i + 0.1]
    )


def test_unfinished_and_unsent_requests_are_counted_as_cancelled():
    got = account([done(i) for i in range(9)], count=12, issued=10, bound_s=40.0, t0=0.0, now=40.0)
    assert len(got) == 12
    reasons = [s.error for s in got[9:]]
    assert reasons[0] == "Cancelled: still in flight at the level's bound of 40 s"
    assert reasons[1:] == ["Cancelled: not sent at the level's bound of 40 s"] * 2
    stats = level_stats(got, 1, 12.0, DEFAULT_OBJECTIVES)
    assert (stats.requests, stats.completed, stats.failed, stats.cancelled) == (12, 9, 3, 3)
    assert stats.first_error.startswith("Cancelled")


def test_a_complete_level_gains_nothing():
    samples = [done(i) for i in range(4)]
    assert account(samples, count=4, issued=4, bound_s=10.0, t0=0.0, now=10.0) == samples


def test_the_level_bound_covers_every_round_of_bounded_requests():
    # 12 requests one at a time, each bounded by 2 s: the level may take 12 rounds of it
    assert level_bound(12, 1, 2.0) == 12 * 3.0 + LEVEL_SLACK_S
    assert level_bound(12, 4, 2.0) == 3 * 3.0 + LEVEL_SLACK_S
