"""The bounds' pure parts: the crowd-scaled total bound of a closed level, and limits written as
people write them (the argparse type that range-checks an option: tests/unit/options)."""

from __future__ import annotations

import pytest

from harness import bounds
from harness.errors import ConfigError


def test_a_number_out_of_range_names_its_limits_plainly():
    with pytest.raises(ConfigError, match="from 1 to 10000, got 0"):
        bounds.number("--concurrency", 0, 1, bounds.MAX_CONCURRENCY, whole=True)


def test_the_crowd_bound_grows_with_the_users_above_the_fixed_one():
    assert bounds.crowd_timeout(120, 15, 1) == 120  # c x 15 below the fixed bound
    assert bounds.crowd_timeout(120, 15, 8) == 120
    assert bounds.crowd_timeout(120, 15, 10) == 150
    assert bounds.crowd_timeout(120, 15, 20) == 300  # the CPU plan's c = 20
    assert bounds.crowd_timeout(120, 0, 20) == bounds.crowd_timeout(120, None, 20) == 120
