"""Arrival schedules for open-loop levels."""

import pytest

from harness.core.schedules import arrival_offsets


def test_poisson_arrivals_are_seeded():
    a = arrival_offsets(10, 500, poisson=True, seed=3)
    assert a == arrival_offsets(10, 500, poisson=True, seed=3) and a != arrival_offsets(10, 500, True, seed=4)
    assert a[-1] / 499 == pytest.approx(0.1, rel=0.15)  # mean gap 1 / rate
    assert arrival_offsets(4, 3, poisson=False) == [0, 0.25, 0.5]


def test_burstiness_keeps_the_mean_gap_and_sets_the_spread():
    from harness.core.schedules import coefficient_of_variation, expected_cv, gaps

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
    from harness.core.schedules import coefficient_of_variation, gaps, lateness

    assert coefficient_of_variation([1.0, 1.0, 1.0]) == 0.0
    assert coefficient_of_variation([1.0, 3.0]) == pytest.approx(0.5)  # sd 1, mean 2
    assert coefficient_of_variation([2.0]) is None and coefficient_of_variation([0.0, 0.0]) is None
    assert gaps([0.3, 0.0, 0.1]) == pytest.approx([0.1, 0.2])
    assert lateness(10.0, 10.002) == pytest.approx(0.002)
