"""Arrival schedules for open-loop levels."""

import pytest

from harness.core.schedules import arrival_offsets


def test_poisson_arrivals_are_seeded():
    a = arrival_offsets(10, 500, poisson=True, seed=3)
    assert a == arrival_offsets(10, 500, poisson=True, seed=3) and a != arrival_offsets(10, 500, True, seed=4)
    assert a[-1] / 499 == pytest.approx(0.1, rel=0.15)  # mean gap 1 / rate
    assert arrival_offsets(4, 3, poisson=False) == [0, 0.25, 0.5]
