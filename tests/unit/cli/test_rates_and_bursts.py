"""Rates, bursts and think times: 0, negative, NaN,
infinite or absurd values are one line before any request (no server here: each case fails
before the first one), in a list as alone. Given as --flag=VALUE, as argparse needs for a value
starting with a dash."""

import pytest

from harness.cli import main

SWEEP = ["sweep", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--no-endpoint-check"]
BAD = ["0", "-1", "nan", "inf", "-inf", "1e-9", "1e9"]


@pytest.mark.parametrize("value", [*BAD, "2,nan", "1,1e9"])
def test_a_rate_that_is_no_pace_is_one_line(value, capsys):
    assert main([*SWEEP, f"--rate={value}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--rate takes a number from 0.001 to 10000" in err and "\n" not in err, err


@pytest.mark.parametrize("value", BAD)
def test_a_burstiness_that_is_no_shape_is_one_line(value, capsys):
    assert main([*SWEEP, "--rate", "2", f"--burstiness={value}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--burstiness takes a number from 0.001 to 1000" in err and "\n" not in err, err


@pytest.mark.parametrize("value", ["-1", "-1e-9", "nan", "inf", "1e9"])
def test_a_think_time_that_is_no_wait_is_one_line(value, capsys):
    args = ["--workload", "conversations", "--turns", "fixed:2", "--message-tokens", "fixed:5"]
    assert main([*SWEEP, *args, f"--think-time={value}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--think-time takes a number from 0 to 604800" in err and "\n" not in err, err


def test_the_open_loops_span_is_said_before_it_starts():
    from harness.report.sweep_lines import rate_span_words

    assert rate_span_words(3, [50.0]) == "each level's schedule spans up to 0.04 s (3 requests at 50/s)"
    slow = rate_span_words(1000, [2.0, 0.001])
    assert slow.startswith("each level's schedule spans up to 999,000.0 s (1000 requests at 0.001/s)")
    assert ": 277.5 h;" in slow
    assert "fewer --requests or a higher --rate" in slow
