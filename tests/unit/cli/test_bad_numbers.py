"""Every numeric option and unusable path is one line before anything starts (no server here:
each case fails before the first request)."""

import pytest

from harness.cli import main

SWEEP = ["sweep", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--no-endpoint-check"]


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--concurrency", "99999999999999999999"], "--concurrency takes a whole number from 1 to 10000"),
        (["--concurrency", "0,2"], "--concurrency takes"),
        (["--concurrency", "a"], "--concurrency must be comma-separated whole numbers"),
        (["--processes", "-1"], "--processes takes a whole number from 0"),
        (["--timeout", "0"], "--timeout takes a positive number of seconds"),
        (["--timeout", "nan"], "--timeout takes a number"),
        (["--timeout", "inf"], "--timeout takes a number"),
        (["--idle-timeout", "-3"], "--idle-timeout takes a number from 0 to 604800"),  # 0: --timeout
        (["--timeout-per-user", "-1"], "--timeout-per-user takes a number from 0 to 604800"),
        (["--timeout-per-user", "nan"], "--timeout-per-user takes a number"),
        (["--rate", "2", "--timeout-per-user", "5"], "--timeout-per-user works with --concurrency"),
        (["--rate", "0"], "--rate takes a number"),
        (["--rate", "1e9"], "--rate takes a number"),
        (["--duration", "nan"], "--duration takes a number"),
        (["--requests", "0"], "--requests takes a whole number"),
        (["--max-tokens", "1"], "--max-tokens takes a whole number"),
        (["--temperature", "nan"], "--temperature takes a number"),
        (["--base-url", "http://[::1/v1"], "is not a usable URL"),
        (["--base-url", "http://host:port/v1"], "is not a usable URL"),
    ],
)
def test_sweep_option_is_one_line(extra, words, capsys):
    assert main(SWEEP + extra) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err and "Traceback" not in err, err


def test_sweep_refuses_a_notebook_it_cannot_write_before_any_level(tmp_path, capsys):
    assert main(SWEEP + ["--labbook", str(tmp_path)]) == 2  # a directory
    err = capsys.readouterr().err.strip()
    assert "cannot be written" in err and "\n" not in err


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--repetitions", "0"], "--repetitions takes a whole number from 1"),
        (["--timeout", "0"], "--timeout takes a positive number of seconds"),
        (["--max-tokens", "-5"], "--max-tokens takes a whole number"),
    ],
)
def test_measure_option_is_one_line(extra, words, capsys):
    args = ["measure", "--engine", "e", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]
    assert main(args + extra) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err, err


def test_a_binary_prompt_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "p.jsonl"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    assert main(SWEEP + ["--prompt-file", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "is not readable UTF-8 JSONL" in err and "\n" not in err, err
