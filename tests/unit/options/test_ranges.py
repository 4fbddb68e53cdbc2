"""The one range check and the generators made from a declaration: the argparse type Locust's
options get, the web form's check, the ``harness`` check after parsing, and a worker's argv."""

from __future__ import annotations

import argparse

import pytest

from harness import options
from harness import bounds
from harness.errors import ConfigError
from harness.options import Option, OptionSet, ranges
from harness.options.load import IDLE_TIMEOUT, LOCUST, MAX_TOKENS, TIMEOUT

BOUND = Option("bound", float, 300.0, "seconds", low=1e-3, high=bounds.MAX_SECONDS)


def _parse(option: Option, text: str):
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument(option.flag, type=ranges.option_type(option))
    return getattr(parser.parse_args([option.flag, text]), option.dest)


def test_an_option_in_range_parses_to_its_number():
    assert _parse(MAX_TOKENS, "64") == 64
    assert _parse(BOUND, "0.5") == 0.5


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
    with pytest.raises(argparse.ArgumentError, match="argument --bound: takes a number") as err:
        _parse(BOUND, text)
    assert words in str(err.value)


def test_a_whole_option_refuses_fractions_and_seconds_say_positive():
    with pytest.raises(argparse.ArgumentError, match=r"takes a whole number from 2 to 1000000, got '1\.5'"):
        _parse(MAX_TOKENS, "1.5")
    with pytest.raises(ConfigError, match="--timeout takes a positive number of seconds, got 0"):
        ranges.check(TIMEOUT, 0)


def test_a_list_option_checks_each_value():
    levels = Option("levels", default="1,2", each=int, low=1, high=10)
    assert ranges.check(levels, "1,4") == [1, 4]
    with pytest.raises(ConfigError, match="--levels takes a whole number from 1 to 10, got 11"):
        ranges.check(levels, "1,11")


def test_the_harness_parser_takes_the_per_command_default_and_checks_after_parsing():
    parser = argparse.ArgumentParser()
    options.to_argparse(parser, LOCUST, command="sweep")
    ns = parser.parse_args(["--model", "m", "--max-tokens", "1"])
    assert ns.idle_timeout is None and ns.timeout == 300.0
    with pytest.raises(ConfigError, match="--max-tokens takes a whole number from 2"):
        options.check(ns, LOCUST)
    with pytest.raises(SystemExit):  # required where the command says so
        parser.parse_args([])


def test_a_rule_runs_after_the_ranges():
    def one_of(ns):
        if ns.a and ns.b:
            raise ConfigError("--a or --b, not both")

    pair = OptionSet("pair", (Option("a", bool, False), Option("b", bool, False)), rules=(one_of,))
    parser = argparse.ArgumentParser()
    options.to_argparse(parser, pair, command="x")
    with pytest.raises(ConfigError, match="not both"):
        options.check(parser.parse_args(["--a", "--b"]), pair)


def test_the_web_form_is_read_as_the_command_line_is():
    form = {"max_tokens": "-5", "user_count": ""}
    assert options.check_form(form, LOCUST) == "--max-tokens takes a whole number from 2 to 1000000, got -5"
    assert options.check_form({"max_tokens": "8", "idle_timeout": "0", "timeout": "5"}, LOCUST) is None
    assert "--timeout takes a positive number" in options.check_form({"timeout": "0"}, LOCUST)


def test_a_worker_argv_gives_the_values_again_under_their_one_name():
    values = {"model": "m", "max_tokens": 8, "temperature": 0.0, "timeout": 12.5, "idle_timeout": None}
    argv = options.to_argv(values, LOCUST)
    assert argv == ["--model", "m", "--max-tokens", "8", "--temperature", "0", "--timeout", "12.5"]
    parser = argparse.ArgumentParser()
    options.to_argparse(parser, LOCUST, command="sweep")
    back = parser.parse_args(argv)
    assert (back.model, back.max_tokens, back.timeout, back.idle_timeout) == ("m", 8, 12.5, None)


def test_from_namespace_is_a_frozen_checked_view():
    ns = argparse.Namespace(timeout=5.0, idle_timeout=None)
    values = options.from_namespace(ns, OptionSet("bounds", (TIMEOUT, IDLE_TIMEOUT)))
    assert values.timeout == 5.0 and dict(values) == {"timeout": 5.0, "idle_timeout": None}
    with pytest.raises(TypeError):
        values["timeout"] = 1.0  # type: ignore[index]
    with pytest.raises(ConfigError):
        options.from_namespace(argparse.Namespace(timeout=-1.0), OptionSet("b", (TIMEOUT,)))
