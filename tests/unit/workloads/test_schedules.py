"""Arrival schedules for open-loop levels."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.workloads.schedules import arrival_offsets
from tests.unit.properties import examples


def test_poisson_arrivals_are_seeded():
    a = arrival_offsets(10, 500, poisson=True, seed=3)
    assert a == arrival_offsets(10, 500, poisson=True, seed=3) and a != arrival_offsets(10, 500, True, seed=4)
    assert a[-1] / 499 == pytest.approx(0.1, rel=0.15)  # mean gap 1 / rate
    assert arrival_offsets(4, 3, poisson=False) == [0, 0.25, 0.5]


def test_burstiness_keeps_the_mean_gap_and_sets_the_spread():
    from harness.workloads.schedules import coefficient_of_variation, expected_cv, gaps

    for k in (0.25, 0.5, 1.0, 4.0):
        offsets = arrival_offsets(50, 20_000, poisson=False, seed=7, burstiness=k)
        spaced = gaps(offsets)
        assert sum(spaced) / len(spaced) == pytest.approx(1 / 50, rel=0.05)  # mean gap 1 / rate, any K
        assert coefficient_of_variation(spaced) == pytest.approx(expected_cv(k, False), rel=0.06)
    # burstiness 1 is Poisson: exponential gaps (CV 1); seeded like every schedule
    assert arrival_offsets(5, 9, False, 2, 0.5) == arrival_offsets(5, 9, False, 2, 0.5)
    assert arrival_offsets(5, 9, False, 2, 0.5) != arrival_offsets(5, 9, False, 3, 0.5)
    with pytest.raises(ValueError):
        arrival_offsets(5, 9, False, 2, 0)


def test_coefficient_of_variation_by_hand():
    from harness.workloads.schedules import coefficient_of_variation, gaps, lateness

    assert coefficient_of_variation([1.0, 1.0, 1.0]) == 0.0
    assert coefficient_of_variation([1.0, 3.0]) == pytest.approx(0.5)  # sd 1, mean 2
    assert coefficient_of_variation([2.0]) is None and coefficient_of_variation([0.0, 0.0]) is None
    assert gaps([0.3, 0.0, 0.1]) == pytest.approx([0.1, 0.2])
    assert lateness(10.0, 10.002) == pytest.approx(0.002)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), -float("inf")])
def test_a_rate_or_burstiness_that_is_no_pace_is_refused(bad):
    """NaN passed ``rate <= 0`` and gave NaN departures; every value that is no pace is refused."""
    with pytest.raises(ValueError, match="rate must be a positive finite number"):
        arrival_offsets(bad, 3, poisson=True)
    with pytest.raises(ValueError, match="burstiness must be a positive finite number"):
        arrival_offsets(1.0, 3, poisson=False, burstiness=bad)


@settings(max_examples=examples(50))
@given(
    st.floats(1e-3, 1e4),
    st.integers(1, 300),
    st.booleans(),
    st.one_of(st.none(), st.floats(1e-3, 1e3)),
    st.integers(0, 2**32),
)
def test_every_schedule_is_finite_ordered_and_starts_at_zero(rate, count, poisson, burst, seed):
    offsets = arrival_offsets(rate, count, poisson, seed, burst)
    assert len(offsets) == count and offsets[0] == 0.0
    assert all(math.isfinite(t) for t in offsets) and offsets == sorted(offsets)


def test_a_schedule_the_client_could_not_keep_is_named():
    from harness.workloads.level_part import schedule_note

    assert schedule_note([0.0005] * 20, [i * 0.1 for i in range(20)]) is None  # kept up
    assert schedule_note([0.02] * 20, [i * 0.1 for i in range(20)]) is None  # 20 ms late of 100 ms gaps
    behind = [i * 0.05 for i in range(20)]  # each later than the last: the client fell behind
    note = schedule_note(behind, [i * 0.051 for i in range(20)])
    assert note.startswith("client-limited: the client could not send at the schedule's pace")
    assert "it kept 19.6 requests/s" in note and "the load offered was less than asked" in note
    assert "all at once" in schedule_note([0.5, 0.6], [3.0, 3.0])
    # a client that stalled 0.37 s, then sent 500 requests due over 0.5 s in 0.22 s: it kept 846
    # requests/s of the 1,000 asked, not the burst's 2,270 (the pace said before)
    due = [i * 0.001 for i in range(500)]
    left = [0.37 + i * 0.00044 for i in range(500)]
    stalled = schedule_note([d - u for d, u in zip(left, due, strict=True)], left, due)
    assert "it kept 846 requests/s of the 1,000 asked" in stalled, stalled


def test_a_level_whose_client_fell_behind_its_schedule_is_client_limited_and_valid(tmp_path):
    from harness.records.level import LevelContext
    from harness.measure.levels import level_record
    from harness.measure.sample import Sample
    from harness.workloads.level_part import workload_stats
    from harness.records.notebook import append_record, read_records

    samples = []
    for i in range(20):
        s = Sample(t_send=i * 0.051, ok=True, tags={"schedule_lateness_s": i * 0.05})
        s.t_sent, s.t_first, s.t_end, s.output_tokens = i * 0.051, i * 0.051 + 0.1, i * 0.051 + 0.5, 3
        s.token_times = [s.t_first]
        samples.append(s)
    stats = workload_stats(samples, "prompts", {}, open_loop=True)
    context = LevelContext("t", "fake", "m", "http://x/v1", "prompts", 16, 0.0)
    record = level_record(
        samples, 20, 2.0, context, "2026-01-01T00:00:00Z", client_cpu=0.3, workload=stats
    ).to_dict()
    assert record["client_limited"] is True and record["schedule_note"].startswith("client-limited")
    append_record(tmp_path / "b.md", record, "level")
    assert not read_records(tmp_path / "b.md", "level").warnings


def test_the_wait_for_a_departure_sleeps_then_yields_then_spins():
    from harness.workloads.schedules import wait_step

    # 10 ms ahead: sleep to 2 ms short of it; 1 ms ahead: let the others run; 0.1 ms: spin
    step, seconds = wait_step(0.0, 0.010, sleep_margin=0.002, spin=0.0002)
    assert step == "sleep" and seconds == pytest.approx(0.008)
    assert wait_step(0.009, 0.010, sleep_margin=0.002, spin=0.0002) == ("yield", 0.0)
    assert wait_step(0.0099, 0.010, sleep_margin=0.002, spin=0.0002) == ("spin", 0.0)
    assert wait_step(0.010, 0.010) == ("go", 0.0) and wait_step(0.5, 0.010) == ("go", 0.0)  # late: at once


@settings(max_examples=examples(200))
@given(st.floats(0, 1e6), st.floats(-10, 10), st.floats(1e-4, 0.05), st.floats(0, 1e-3))
def test_a_wait_never_sleeps_past_its_margin_and_goes_only_when_due(now, ahead, margin, spin):
    from harness.workloads.schedules import wait_step

    due = now + ahead
    ahead = due - now  # as the floats have it
    step, seconds = wait_step(now, due, margin, spin)
    assert (step == "go") == (ahead <= 0)
    if step == "sleep":  # a timer woken even a margin late still leaves time to yield and spin
        assert seconds > 0 and seconds + margin == pytest.approx(ahead)
    else:
        assert seconds == 0.0
    assert step != "spin" or ahead <= max(spin, margin)
