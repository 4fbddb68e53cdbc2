"""The run report: headline numbers and report.md from a small recorded notebook (three sweeps
against the practice server: a baseline curve and a prefix pair)."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from harness.report import run_report
from harness.run.plans import load_plan
from tests.conftest import FIXTURES

NOTEBOOK = FIXTURES / "notebooks" / "practice-run.md"
PAIR = {"practice-baseline": ("practice-prefix-unique", "practice-prefix-shared")}


def raw_levels() -> dict[str, dict[int, dict]]:
    """The level records of the fixture, read without the harness (to check the harness against)."""
    out: dict[str, dict[int, dict]] = {}
    for line in NOTEBOOK.read_text().splitlines():
        rec = json.loads(line)
        if "concurrency" in rec and rec.get("record", "level") == "level":
            out.setdefault(rec["label"], {})[rec["concurrency"]] = rec
    return out


def test_levels_in_reads_every_level_by_label():
    levels = run_report.levels_in(NOTEBOOK)
    assert {label: sorted(lv) for label, lv in levels.items()} == {
        "practice-baseline": [1, 2, 4, 8, 16],
        "practice-prefix-unique": [1, 4],
        "practice-prefix-shared": [1, 4],
    }


def test_headline_peak_and_prefix_change_agree_with_the_records():
    raw = raw_levels()
    (row,) = run_report.headlines(run_report.levels_in(NOTEBOOK), ["practice-baseline"], PAIR, 2.0)
    assert row["label"] == "practice-baseline" and row["engine"] == "practice"
    assert row["peak_tok_s"] == max(r["output_tokens_per_s"] for r in raw["practice-baseline"].values())
    unique = raw["practice-prefix-unique"][1]["ttft_s"]["p50"]
    shared = raw["practice-prefix-shared"][1]["ttft_s"]["p50"]
    assert row["prefix"]["c"] == 1
    assert (row["prefix"]["ttft_unique_s"], row["prefix"]["ttft_shared_s"]) == (unique, shared)
    assert row["prefix"]["change"] == pytest.approx((shared - unique) / unique)
    assert shared < unique  # the shared preamble was served from the cache
    within = [c for c, r in raw["practice-baseline"].items() if r["ttft_s"]["p95"] <= 2.0]
    assert row["capacity"] == max(within)


def test_headline_line_states_every_figure():
    rows = run_report.headlines(run_report.levels_in(NOTEBOOK), ["practice-baseline"], PAIR, 2.0)
    (line,) = run_report.headline_lines(rows, 2.0)
    r = rows[0]
    assert line.startswith(
        f"practice-baseline (practice): peak {r['peak_tok_s']:.1f} tok/s, knee {r['knee']}, "
    )
    assert f"capacity within 2 s p95 TTFT: {r['capacity']}" in line
    assert f"prefix caching: TTFT p50 {r['prefix']['ttft_unique_s']:.3f} -> " in line
    assert "of the prompt cached" in line


def test_curves_without_levels_or_pair_are_left_out_or_say_so():
    levels = run_report.levels_in(NOTEBOOK)
    assert run_report.headlines(levels, ["never-run"], {}, 2.0) == []
    (row,) = run_report.headlines(levels, ["practice-baseline"], {}, 2.0)
    assert row["prefix"] is None
    assert run_report.headline_lines([row], 2.0)[0].endswith("prefix caching: no pair")
    assert run_report.prefix_change({1: {}}, {4: {}}) is None  # no level both ran


def small_plan(tmp_path):
    plan = {
        "schema_version": 1,
        "name": "small",
        "title": "A small practice run",
        "variables": {"PROMISE_S": 2},
        "stages": [
            {
                "id": "practice",
                "engine": "practice",
                "steps": [
                    {
                        "sweep": {
                            "label": "practice-baseline",
                            "concurrency": "1,2,4,8,16",
                            "prompt_set": "mixed",
                        }
                    },
                    {
                        "sweep": {
                            "label": "practice-prefix-unique",
                            "concurrency": "1,4",
                            "prompt_set": "unique-prefix",
                        }
                    },
                    {
                        "sweep": {
                            "label": "practice-prefix-shared",
                            "concurrency": "1,4",
                            "prompt_set": "shared-prefix",
                        }
                    },
                ],
            },
            {"summarise": {"labels": ["practice-baseline"], "promise": "${PROMISE_S}"}},
        ],
    }
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(plan))
    return load_plan(str(path))


def test_plan_pairs_find_the_prefix_pair_of_the_curve(tmp_path):
    assert run_report.plan_pairs(small_plan(tmp_path)) == (["practice-baseline"], PAIR)


def test_report_from_the_notebook_and_a_manifest(tmp_path):
    plan = small_plan(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(NOTEBOOK, run_dir / "labbook.md")
    manifest = {
        "started": "2026-12-01T04:25:00+0000",
        "updated": "2026-12-01T04:26:00+0000",
        "host": {"system": "Linux", "cpus": 2},
        "engines": {"practice": {"engine": "practice", "version": "0.1.0", "command": "harness practice"}},
        "steps": [
            {"id": "practice/sweep:practice-baseline", "kind": "sweep", "status": "done", "duration_s": 9.5}
        ],
    }
    path = run_report.write_report(run_dir, plan, manifest)
    text = path.read_text()
    assert path == run_dir / "report.md" and text.startswith("# A small practice run\n")
    (headline,) = run_report.headline_lines(
        run_report.headlines(run_report.levels_in(NOTEBOOK), ["practice-baseline"], PAIR, 2.0), 2.0
    )
    assert f"- {headline}" in text
    assert "![crowd chart](charts/crowd.png)" in text
    assert (run_dir / "charts" / "crowd.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = [
        [cell.strip() for cell in line.split("|")[1:-1]]
        for line in text.splitlines()
        if line.startswith("| ")
    ]
    assert ["practice", "practice", "0.1.0", "—", "`harness practice`"] in rows
    assert ["practice/sweep:practice-baseline", "done", "9.5", ""] in rows
    assert "Cross-check" not in text  # no cross-check record in this notebook


def test_cross_check_table_marks_missing_figures():
    check = {
        "label": "llama-baseline",
        "concurrency": 4,
        "tool": "batched-bench",
        "verdict": "match",
        "ours": {"output_tokens_per_s": 50.0, "tpot_p50_s": 0.02},
        "theirs": {"output_tokens_per_s": 52.5, "tpot_p50_s": None},
        "output_tokens_per_s_ratio": 0.952,
    }
    table = run_report.cross_check_table([check]).splitlines()
    assert [cell.strip() for cell in table[2].split("|")[1:-1]] == [
        # tabulate re-reads numbers
        "llama-baseline c=4",
        "batched-bench",
        "50",
        "52.5",
        "0.95",
        "0.02",
        "—",
        "match",
    ]
