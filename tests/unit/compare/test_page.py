"""`harness compare` on notebooks (the practice fixture's runs): the page, its charts and the terminal
lines, through the command itself (harness.cli.main, in process)."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.compare import page
from harness.compare.runs import read_runs
from harness.errors import ConfigError
from tests.unit.compare.conftest import variant


def notebook(path, *runs) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for run in runs for r in run.records))
    return str(path)


def test_two_engines_and_other_prompts_in_one_page(baseline, tmp_path, capsys):
    energy = {"telemetry": "practice", "source": "practice", "label": "imitation", "energy_j": 20.0}
    energy.update(mean_power_w=155.0, j_per_output_token=0.25, output_tokens_per_j=4.0)
    measured = [dict(r, energy=energy) for r in baseline]
    first = notebook(tmp_path / "a.md", variant(measured, "kit", repeats=3))
    second = notebook(
        tmp_path / "b.md",
        variant(baseline, "llama", scale=0.5, repeats=3, engine="llama.cpp", server_slots=4),
        variant(baseline, "long", prompt_set="long"),
    )
    out_dir = tmp_path / "cmp"
    assert main(["compare", first, second, "--report-dir", str(out_dir)]) == 0
    said = capsys.readouterr().out
    assert "==> compare: 3 runs in 2 comparable set(s), tolerance 5%" in said
    assert "What differs between the runs: engine (practice, llama.cpp); slots (not stated, 4)" in said
    assert (
        "not compared with the others: different conditions: prompt set is mixed in kit and long in long"
        in said
    )
    assert (
        "called: llama against kit (engine practice -> llama.cpp, slots not stated -> 4): output tok/s "
        "at c=1: " in said
    )
    text = (out_dir / "compare.md").read_text()
    for part in (
        "## Headline",
        "## Comparable sets",
        "### llama against kit",
        "Differences called:",
        "## Charts",
    ):
        assert part in text
    assert "50.0% worse, called" in text
    kit_row = next(line for line in text.splitlines() if line.startswith("| kit "))
    assert "| c=16 " in kit_row and kit_row.replace(" ", "").endswith("|0.25(imitation)|")
    for chart in ("compare-crowd.png", "compare-pareto.png"):
        assert (out_dir / "charts" / chart).stat().st_size > 10_000
        assert f"(charts/{chart})" in text
    html = (out_dir / "compare.html").read_text()
    assert html.count("data:image/png;base64,") == 2 and "<table>" in html


def test_one_engine_shares_a_colour_and_each_run_its_own_line(baseline):
    runs = [
        variant(baseline, "kit"),
        variant(baseline, "llama", engine="llama.cpp"),
        variant(baseline, "kit-again"),
    ]
    drawn = page.styles(page.build(runs, 0.05, None))
    assert drawn["kit"]["color"] == drawn["kit-again"]["color"] != drawn["llama"]["color"]
    assert drawn["kit"]["linestyle"] != drawn["kit-again"]["linestyle"]


def test_fewer_than_two_runs_or_an_unknown_label_is_one_line(baseline, tmp_path):
    one = notebook(tmp_path / "one.md", variant(baseline, "kit"))
    with pytest.raises(ConfigError, match="compare needs two runs or more"):
        read_runs([one, one], "labbook.md")
    with pytest.raises(ConfigError, match="no level records for label 'nope'"):
        read_runs([one, f"{one}:nope"], "labbook.md")
    other = notebook(tmp_path / "two.md", variant(baseline, "kit"))
    runs, _ = read_runs([one, other], "labbook.md")
    assert [r.name for r in runs] == ["kit (one.md)", "kit (two.md)"]
