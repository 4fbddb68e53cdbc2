"""A mistyped option gets its own subcommand's usage and the nearest option, in one line."""

from __future__ import annotations

import pytest

from harness.cli import main


def error_of(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_a_subcommand_typo_gets_that_subcommands_usage_and_a_suggestion(capsys):
    err = error_of(["sweep", "--concurency", "1,2", "--model", "m"], capsys)
    assert err.startswith("usage: harness sweep ")
    last = err.strip().splitlines()[-1]
    assert last.startswith("harness sweep: error: unrecognized arguments: --concurency 1,2")
    assert "did you mean --concurrency?" in last


def test_a_typo_hidden_behind_a_missing_required_option_is_named_too(capsys):
    last = error_of(["summarise", "--lable", "mine"], capsys).strip().splitlines()[-1]
    assert "is required" in last and "did you mean --label?" in last


def test_an_option_with_nothing_near_it_is_named_without_a_guess(capsys):
    last = error_of(["predict", "--zzzzqqq"], capsys).strip().splitlines()[-1]
    assert "--zzzzqqq is no option of harness predict" in last and "did you mean" not in last


def test_an_unknown_top_level_option_keeps_the_top_level_usage(capsys):
    err = error_of(["--bogus"], capsys)
    assert err.startswith("usage: harness [-h]") and "unrecognized arguments: --bogus" in err
