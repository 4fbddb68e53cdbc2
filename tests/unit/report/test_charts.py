"""Charts: a PNG is written, of a sensible size, from level records; the conditions line."""

from __future__ import annotations

import struct

from harness.records.sample import SampleLine
from harness.report import charts, run_report
from tests.conftest import FIXTURES

NOTEBOOK = FIXTURES / "notebooks" / "practice-run.md"


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_crowd_chart_is_a_png_of_the_figure_size(tmp_path):
    levels = run_report.levels_in(NOTEBOOK)
    path = charts.crowd_chart(
        {"practice-baseline": levels["practice-baseline"]}, tmp_path / "sub" / "crowd.png", 2.0
    )
    assert path == tmp_path / "sub" / "crowd.png"
    assert png_size(path) == (8 * 110, 7 * 110)  # figsize 8 x 7 inches at 110 dpi
    assert 10_000 < path.stat().st_size < 500_000


def test_tpot_chart_with_its_fit(tmp_path):
    levels = run_report.levels_in(NOTEBOOK)["practice-baseline"]
    path = charts.tpot_chart(
        "practice-baseline",
        levels,
        {"a_s": 0.018, "b_s": 0.0005, "levels_used": [1, 2]},
        tmp_path / "tpot.png",
    )
    assert png_size(path) == (7 * 110, 4 * 110)
    without = charts.tpot_chart("practice-baseline", levels, None, tmp_path / "tpot-nofit.png")
    assert without.read_bytes() != path.read_bytes()  # the fitted line is drawn only when given


def test_conditions_line_states_the_traffic_crowds_and_promise():
    levels = run_report.levels_in(NOTEBOOK)
    recs = list(levels["practice-baseline"].values())
    tokens_in = round(sum(r["prompt_tokens_mean"] for r in recs) / len(recs))
    assert charts.conditions({"practice-baseline": levels["practice-baseline"]}, 2.0) == (
        f"about {tokens_in} tokens in / up to 32 out · 1 to 16 at once (closed loop) · promise: p95 first "
        f"token "
        "within 2 s"
    )
    assert (
        charts.conditions({"x": {3: {}}}, None)
        == "about ? tokens in / up to ? out · 3 to 3 at once (closed loop)"
    )


def sample_rows() -> list[SampleLine]:
    """Per-request rows as the samples file holds them: two crowd sizes, one failed request."""
    rows = []
    for c, ttft, end in ((1, 0.03, 0.3), (4, 0.09, 0.4)):
        for i in range(8):
            rows.append(
                {
                    "label": "x",
                    "concurrency": c,
                    "ok": True,
                    "ttft_s": ttft + i * 0.001,
                    "end_s": end + i * 0.002,
                    "departed_monotonic_s": 100.0 + (c - 1) * 3 + i * 0.3,
                }
            )
    rows.append(
        {
            "label": "x",
            "concurrency": 4,
            "ok": False,
            "ttft_s": None,
            "end_s": 1.0,
            "departed_monotonic_s": 106,
        }
    )
    return [SampleLine.read(row) for row in rows]


def test_pareto_histogram_and_time_charts_are_pngs(tmp_path):
    levels = run_report.levels_in(NOTEBOOK)
    pareto = charts.pareto_chart({"practice-baseline": levels["practice-baseline"]}, tmp_path / "p.png")
    assert png_size(pareto) == (7 * 110, 5 * 110)
    hist = charts.latency_histogram("x", sample_rows(), tmp_path / "h.png")
    assert png_size(hist) == (10 * 110, 4 * 110)
    over = charts.requests_over_time("x", sample_rows(), tmp_path / "t.png")
    assert png_size(over) == (9 * 110, int(3.5 * 110))
    without_failure = charts.requests_over_time("x", sample_rows()[:-1], tmp_path / "t2.png")
    assert without_failure.read_bytes() != over.read_bytes()  # the failed request is marked


def test_crowd_chart_draws_error_bars_for_repeated_levels(tmp_path):
    from harness.measure import curves

    base = run_report.levels_in(NOTEBOOK)["practice-baseline"]
    runs = [
        dict(base[8], run_id="r", repeat=i, output_tokens_per_s=base[8]["output_tokens_per_s"] + d)
        for i, d in ((1, -20), (2, 0), (3, 20))
    ]
    repeated = {**base, 8: curves.merge_runs(runs)}
    plain = charts.crowd_chart({"p": base}, tmp_path / "plain.png")
    bars = charts.crowd_chart({"p": repeated}, tmp_path / "bars.png")
    assert plain.read_bytes() != bars.read_bytes()
