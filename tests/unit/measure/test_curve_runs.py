"""Repeated runs merged into one level, mixed-run notes, and capacity read off listed levels."""

from harness.measure import curves
from harness.report import curve_tables as ct
from tests.unit.measure.test_curves import level


def run_of(c, tok_s, ttft95, run_id="r1", repeat=1, failed=0):
    return level(c, tok_s, 0.02, ttft95=ttft95, failed=failed, run_id=run_id, repeat=repeat, repeats=3)


def test_repeats_of_one_run_merge_into_median_and_range():
    recs = [run_of(8, t, p, repeat=i + 1) for i, (t, p) in enumerate([(300, 0.2), (290, 0.4), (310, 0.3)])]
    merged = curves.by_label(recs)["x"][8]
    assert merged["runs"] == 3 and merged["output_tokens_per_s"] == 300
    assert merged["ttft_s"]["p95"] == 0.3
    assert curves.spread_of(merged, "output_tokens_per_s") == [290, 310]
    assert curves.spread_of(merged, "ttft_s", "p95") == [0.2, 0.4]
    assert merged["requests"] == 30  # every run's requests counted
    assert ct.with_spread(merged, "output_tokens_per_s", None, ".1f") == "300.0 (290.0-310.0)"
    assert "median of the runs" in ct.spread_note({8: merged})


def test_a_failure_in_any_run_stays_a_failure():
    recs = [run_of(8, 300, 0.1, repeat=1), run_of(8, 300, 0.1, repeat=2, failed=1)]
    merged = curves.by_label(recs)["x"][8]
    assert merged["failed"] == 1
    assert curves.capacity_reading({8: merged}, 0.5).reading == "none"


def test_a_later_run_replaces_the_earlier_one_and_the_curve_says_it_is_mixed():
    recs = [run_of(1, 50, 0.1, "old"), run_of(8, 300, 0.1, "old"), run_of(8, 280, 0.2, "new")]
    levels = curves.by_label(recs)["x"]
    assert levels[8]["output_tokens_per_s"] == 280 and "runs" not in levels[8]
    note = ct.runs_note(levels)
    assert note.startswith("mixed runs: this curve's levels come from 2 different runs")
    assert "c=1 from run old" in note and "c=8 from run new" in note
    assert ct.runs_note(curves.by_label(recs[:2])["x"]) is None
    # records without a run id (the lab's own script) are not judged
    assert ct.runs_note({1: level(1, 50, 0.02), 8: level(8, 300, 0.02)}) is None


def test_capacity_reading_never_overstates():
    def lv(*ttft95):
        return {c: level(c, 10.0 * c, 0.02, ttft95=t) for c, t in zip((1, 2, 4, 8, 16), ttft95, strict=True)}

    top_passes = curves.capacity_reading(lv(0.1, 0.1, 0.1, 0.1, 0.1), 0.5)
    assert (top_passes.capacity, top_passes.reading) == (16, "at least")
    assert top_passes.text.startswith("at least 16 at once")
    gap = curves.capacity_reading(lv(0.1, 0.1, 0.1, 0.1, 3.0), 0.5)
    assert (gap.capacity, gap.reading) == (8, "at least") and "fewer than 16" in gap.text
    first = curves.capacity_reading(lv(3.0, 3.0, 3.0, 3.0, 3.0), 0.5)
    assert (first.capacity, first.reading) == (None, "none") and first.text.startswith("none")
    # a level above the first that breaks it does not count, however good it looks
    later = curves.capacity_reading(lv(0.1, 3.0, 0.1, 0.1, 0.1), 0.5)
    assert (later.capacity, later.reading) == (1, "exact") and later.text == "1 at once (2 breaks it)"
    assert ct.capacity_line(lv(0.1, 0.1, 0.1, 0.1, 0.1), 0.5).startswith(
        "capacity within the promise (p95 first token <= 0.5 s): at least 16"
    )


def test_the_seats_ceiling_when_seats_are_known_and_one_over_b_only_when_not():
    tpot = {c: 0.02 + 0.002 * c for c in (1, 2, 4, 8, 16)}
    seated = {c: level(c, c / t, t, server_slots=8) for c, t in tpot.items()}
    d = curves.curve(seated)
    lines = ct.fit_lines(d, seated)
    assert any(line.startswith("ceiling at 8 seats") for line in lines)
    assert not any("1 / b" in line for line in lines)
    assert "c = 1, 2, 4, 8; it holds over those levels only" in lines[0]
    open_ended = {c: level(c, c / t, t) for c, t in tpot.items()}
    lines = ct.fit_lines(curves.curve(open_ended), open_ended)
    assert any(
        line.startswith("ceiling: 1 / b = 500.0 tok/s if every request were admitted") for line in lines
    )


def test_operating_point_at_the_top_level_says_a_higher_one_may_qualify():
    lv = {c: level(c, 10.0 * c, 0.02) for c in (1, 2, 4)}
    assert "c=4 (the top level measured: a higher one may qualify too)" in ct.operating_line(curves.curve(lv))


def test_summarise_says_at_least_shows_the_runs_range_and_records_it(tmp_path, capsys):
    import json

    import pytest

    from harness.cli import main
    from tests.unit.measure.test_curves import write_book

    recs = [
        run_of(c, 50.0 * c + d, 0.1 + d / 1000, repeat=i)
        for c in (1, 2, 4)
        for i, d in ((1, -2), (2, 0), (3, 2))
    ]
    book = write_book(tmp_path / "labbook.md", recs)
    code = main(
        ["summarise", "--labbook", str(book), "--label", "x", "--promise", "0.5", "--peak", "40", "--record"]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "capacity within the promise (p95 first token <= 0.5 s): at least 4 at once" in out
    copies = "a peak of 40 needs 40 / 4 -> 10 copies, 12 with 20% spares"
    assert f"{copies} (at most: the capacity is a lower bound)" in out
    assert "200.0 (198.0-202.0)" in out and "30/30 (3 runs)" in out
    assert "levels run 3 times: each figure is the median of the runs" in out
    summary = json.loads(book.read_text().strip().splitlines()[-1])
    assert summary["capacity_reading"] == "at least" and summary["capacity_within_promise"] == 4
    assert "seat_ceiling_tokens_per_s" not in summary  # no seats given, no plateau: 1 / b only
    assert summary["spread"][2] == {
        "c": 4,
        "runs": 3,
        "output_tokens_per_s": [198.0, 202.0],
        "ttft_p50_s": [0.25, 0.25],
        "ttft_p95_s": pytest.approx([0.098, 0.102]),
        "tpot_p50_s": [0.02, 0.02],
        "tpot_p90_s": pytest.approx([0.022, 0.022]),
    }


def test_the_curve_summary_records_the_seats_ceiling_when_seats_are_known(tmp_path):
    import json

    from harness.cli import main
    from tests.unit.measure.test_curves import write_book

    tpot = {c: 0.02 + 0.002 * c for c in (1, 2, 4, 8)}
    book = write_book(tmp_path / "b.md", [level(c, c / t, t, server_slots=8) for c, t in tpot.items()])
    assert main(["summarise", "--labbook", str(book), "--label", "x", "--record"]) == 0
    summary = json.loads(book.read_text().strip().splitlines()[-1])
    assert summary["seat_ceiling_tokens_per_s"] == round(8 / (0.02 + 0.002 * 8), 1)
    assert "capacity_reading" not in summary  # no promise given
