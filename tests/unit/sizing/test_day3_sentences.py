"""Day 3's numbers 3 and 4 (seed 002) as its sentences: total output alone against at capacity as
"about N times as much", and the speed each person sees (1 / TPOT p50) there, with how much slower."""

from __future__ import annotations

from harness.sizing.criterion import alone_against_capacity


def level(out_tok_s: float, tpot_p50: float) -> dict:
    return {"output_tokens_per_s": out_tok_s, "tpot_s": {"p50": tpot_p50}}


def test_the_seeds_practice_server_example():
    # seed 002: 54.1 alone, 275.1 at 8 people, 5 times as much; 54.9 alone, 38.9 at 8 people, 29% slower
    levels = {1: level(54.1, 1 / 54.9), 8: level(275.1, 1 / 38.9), 16: level(280.0, 0.05)}
    assert alone_against_capacity(levels, 8) == [
        "total output: 54.1 tok/s alone, 275.1 at 8 people, about 5 times as much",
        "speed each person sees (1 / TPOT p50): 54.9 tok/s alone, 38.9 at 8 people, 29% slower",
    ]


def test_nothing_without_a_crowd_of_one_or_a_capacity():
    assert alone_against_capacity({2: level(10, 0.1), 4: level(20, 0.1)}, 4) == []
    assert alone_against_capacity({1: level(10, 0.1)}, None) == []
    assert alone_against_capacity({1: level(10, 0.1), 2: level(14, 0.1)}, 2)[0].endswith(
        "about 1.4 times as much"
    )


def test_summarise_prints_them_under_the_capacity(tmp_path, capsys):
    from harness.cli import main
    from tests.conftest import FIXTURES

    book = FIXTURES / "notebooks" / "practice-run.md"
    assert main(["summarise", "--labbook", str(book), "--label", "practice-baseline", "--promise", "2"]) == 0
    out = capsys.readouterr().out
    assert "total output: " in out and " times as much" in out and "speed each person sees" in out
