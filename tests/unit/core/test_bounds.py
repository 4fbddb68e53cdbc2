"""The bounds' pure parts: the argparse type that range-checks an option as it is parsed, the
crowd-scaled total bound of a closed level, and limits written as people write them."""

from __future__ import annotations

import argparse

import pytest

from harness.core import bounds
from harness.errors import ConfigError


def _parse(flag: str, text: str, low: float, high: float, whole: bool = False):
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument(flag, type=bounds.option_type(flag, low, high, whole))
    return getattr(parser.parse_args([flag, text]), flag[2:].replace("-", "_"))


def test_an_option_in_range_parses_to_its_number():
    assert _parse("--max-tokens", "64", 2, 1_000_000, whole=True) == 64
    assert _parse("--request-timeout", "0.5", 1e-3, bounds.MAX_SECONDS) == 0.5


@pytest.mark.parametrize(
    "text, words",
    [
        ("0", "takes a number from 0.001 to 604800, got 0.0"),
        ("nan", "got nan"),
        ("inf", "got inf"),
        ("abc", "got 'abc'"),
        ("1e9", "to 604800, got 1000000000.0"),
    ],
)
def test_out_of_range_or_not_a_number_is_argparses_one_line(text, words):
    with pytest.raises(argparse.ArgumentError, match="argument --request-timeout: takes a number") as err:
        _parse("--request-timeout", text, 1e-3, bounds.MAX_SECONDS)
    assert words in str(err.value)


def test_a_whole_option_refuses_fractions_and_names_its_limits_plainly():
    with pytest.raises(argparse.ArgumentError, match=r"takes a whole number from 2 to 1000000, got '1\.5'"):
        _parse("--max-tokens", "1.5", 2, bounds.MAX_TOKENS, whole=True)
    with pytest.raises(ConfigError, match="from 1 to 10000, got 0"):
        bounds.number("--concurrency", 0, 1, bounds.MAX_CONCURRENCY, whole=True)


def test_the_crowd_bound_grows_with_the_users_above_the_fixed_one():
    assert bounds.crowd_timeout(120, 15, 1) == 120  # c x 15 below the fixed bound
    assert bounds.crowd_timeout(120, 15, 8) == 120
    assert bounds.crowd_timeout(120, 15, 10) == 150
    assert bounds.crowd_timeout(120, 15, 20) == 300  # the CPU plan's c = 20
    assert bounds.crowd_timeout(120, 0, 20) == bounds.crowd_timeout(120, None, 20) == 120
