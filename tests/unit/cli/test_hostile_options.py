"""A fourth hostile sweep over the new inputs' options: each case is one line and exit 2
before any request (no server here: the base URL is a closed port, so a case that got past its
check would say that nothing answers there instead)."""

import pytest

from harness.cli import main

SWEEP = ["sweep", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--no-endpoint-check"]


def _refused(args: list[str], capsys) -> str:
    assert main([*SWEEP, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "nothing answers" not in err, err
    return err


@pytest.mark.parametrize(
    "args",
    [
        ["--output-tokens", "fixed:5000"],
        ["--output-tokens", "uniform:10-5000", "--prompt-set", "long"],
        ["--max-tokens", "5000"],
        ["--workload", "conversations", "--turns", "fixed:2", "--message-tokens", "fixed:5",
         "--output-tokens", "fixed:5000"],
    ],
)  # fmt: skip
def test_output_lengths_past_the_context_are_refused_with_the_limit_named(args, capsys):
    """--output-tokens (or --max-tokens) alone past --context-length was sent: every request
    failed at the server. The output alone is already the least such a request asks."""
    err = _refused([*args, "--context-length", "4096"], capsys)
    assert "up to 500" in err and "context of 4096 tokens (--context-length)" in err, err


SIZING = [
    ["--promise=nan"],
    ["--promise=-1"],
    ["--promise=1e308"],
    ["--peak=-5"],
    ["--peak", "99999999999999999999"],
    ["--peak", "10", "--spares=nan"],
    ["--peak", "10", "--spares=-1"],
    ["--peak", "10", "--spares=1e308"],
]


@pytest.mark.parametrize("args", SIZING)
def test_sizing_options_are_refused_before_anything_is_read_or_sent(args, tmp_path, capsys):
    """--spares nan was a ValueError traceback after capacity's whole search (and in summarise);
    --spares -1 or --peak -5 printed 0 or -2 copies; summarise took a NaN or negative promise."""
    commands = [
        ["summarise", "--label", "x", "--labbook", str(tmp_path / "none.md")],
        ["capacity", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"],
        ["demo", "--log-dir", str(tmp_path / "demo")],  # before its practice server starts
    ]
    option = args[-1].split("=")[0] if "=" in args[-1] else args[0]
    for command in commands[:2] if option == "--spares" else commands:  # the demo has no --spares
        assert main([*command, "--promise", "2", *args]) == 2, command
        err = capsys.readouterr().err.strip()
        assert f"harness {command[0]}: {option} takes a" in err and "\n" not in err, (command, err)
    assert not (tmp_path / "demo").exists()


@pytest.mark.parametrize("price", ["--price-per-hour=1e308", "--price-per-kwh=1e9", "--price-per-hour=nan"])
def test_a_price_past_any_real_one_is_refused_before_the_level_is_run(price, capsys):
    """--price-per-hour 1e308 ran the level, then refused its record (cost inf): the level lost."""
    err = _refused([price], capsys)
    assert "must be a number from 0 to 1,000,000" in err, err
