"""The run report: headline numbers and report.md from a small recorded notebook (three sweeps
against the practice server: a baseline curve and a prefix pair)."""

from __future__ import annotations

import base64
import json
import re
import shutil

import pytest
import yaml

from harness.records.sample import SampleLine
from harness.report import headlines, record_sections, run_report
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
    (row,) = headlines.headlines(run_report.levels_in(NOTEBOOK), ["practice-baseline"], PAIR, 2.0)
    assert row["label"] == "practice-baseline" and row["engine"] == "practice"
    assert row["peak_tok_s"] == max(r["output_tokens_per_s"] for r in raw["practice-baseline"].values())
    unique = raw["practice-prefix-unique"][1]["ttft_s"]["p50"]
    shared = raw["practice-prefix-shared"][1]["ttft_s"]["p50"]
    assert row["prefix"]["c"] == 1
    assert (row["prefix"]["ttft_unique_s"], row["prefix"]["ttft_shared_s"]) == (unique, shared)
    assert row["prefix"]["change"] == pytest.approx((shared - unique) / unique)
    assert shared < unique  # the shared preamble was served from the cache
    within = [c for c, r in raw["practice-baseline"].items() if r["ttft_s"]["p95"] <= 2.0]
    # the top level measured kept the promise: the truth is "at least", never "exactly"
    assert max(within) == max(raw["practice-baseline"])
    assert (row["capacity"].capacity, row["capacity"].reading) == (max(within), "at least")
    assert row["capacity"].text.startswith(f"at least {max(within)} at once")


def test_headline_line_states_every_figure():
    rows = headlines.headlines(run_report.levels_in(NOTEBOOK), ["practice-baseline"], PAIR, 2.0)
    (line,) = headlines.headline_lines(rows, 2.0)
    r = rows[0]
    assert line.startswith(
        f"practice-baseline (practice): peak {r['peak_tok_s']:.1f} tok/s, knee {r['knee']}, "
    )
    assert f"capacity within the promise of 2 s p95 TTFT: at least {r['capacity'].capacity} at once" in line
    assert f"prefix caching: TTFT p50 {r['prefix']['ttft_unique_s']:.3f} -> " in line
    assert "of the prompt cached" in line


def test_curves_without_levels_or_pair_are_left_out_or_say_so():
    levels = run_report.levels_in(NOTEBOOK)
    assert headlines.headlines(levels, ["never-run"], {}, 2.0) == []
    (row,) = headlines.headlines(levels, ["practice-baseline"], {}, 2.0)
    assert row["prefix"] is None
    assert headlines.headline_lines([row], 2.0)[0].endswith("prefix caching: no pair")
    assert headlines.prefix_change({1: {}}, {4: {}}) is None  # no level both ran


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


MANIFEST = {
    "started": "2026-12-01T04:25:00+0000",
    "updated": "2026-12-01T04:26:00+0000",
    "host": {"system": "Linux", "cpus": 2},
    "engines": {"practice": {"engine": "practice", "version": "0.1.0", "command": "harness practice"}},
    "steps": [
        {"id": "practice/sweep:practice-baseline", "kind": "sweep", "status": "passed", "duration_s": 9.5},
        {"id": "summarise", "kind": "summarise", "status": "passed", "duration_s": 1.0},
        {"id": "report", "kind": "report", "status": "running"},
    ],
}


def write(tmp_path, notebook=NOTEBOOK, manifest=MANIFEST):
    plan = small_plan(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    if notebook is not None:
        shutil.copy(notebook, run_dir / "labbook.md")
    return run_dir, run_report.write_report(run_dir, plan, manifest)


@pytest.fixture(scope="module")
def default_report(tmp_path_factory):
    """The report of the fixture notebook and manifest, written once for the tests below that only
    read it: each write draws every chart (about half a second of a 2-core machine's CPU)."""
    return write(tmp_path_factory.mktemp("default"))


def md_rows(text: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.split("|")[1:-1]]
        for line in text.splitlines()
        if line.startswith("| ")
    ]


def test_report_from_the_notebook_and_a_manifest(default_report):
    run_dir, path = default_report
    text = path.read_text()
    assert path == run_dir / "report.md" and text.startswith("# A small practice run\n")
    (row,) = headlines.headlines(run_report.levels_in(NOTEBOOK), ["practice-baseline"], PAIR, 2.0)
    rows = md_rows(text)
    headline = next(r for r in rows if r[0] == "practice-baseline")
    assert headline[:3] == ["practice-baseline", "practice", f"{row['peak_tok_s']:.1f}"]
    assert headline[5] == row["capacity"].text and headline[5].startswith("at least 16 at once")
    assert headline[6] == "no admission step"
    assert headline[7].startswith(
        f"{row['prefix']['ttft_unique_s']:.3f} -> {row['prefix']['ttft_shared_s']:.3f}"
    )
    # the headline comes first: before the charts, the conditions and every other section
    assert text.index("## Headline") < text.index("![") < text.index("## Test conditions")
    assert "![total output and p95 first-token wait against crowd size](charts/crowd.png)" in text
    assert (run_dir / "charts" / "crowd.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ["practice", "practice", "0.1.0", "—"] in rows
    assert "- practice: `harness practice`" in text
    assert ["practice/sweep:practice-baseline", "passed", "9.5", "—"] in rows
    # the report step is the one writing this file: it reads as done, never as "running"
    assert ["report", "passed", "—", "wrote this report (report.md and report.html)"] in rows
    assert "running" not in text
    assert "Cross-check" not in text  # no cross-check step in this plan and no record
    # every latency column states its unit; ITL and end-to-end tails are in the curve table
    curve_head = next(r for r in rows if r[:3] == ["c", "ok", "out tok/s"])
    for column in ("TTFT p99 (s)", "ITL p50 (s)", "ITL p99 (s)", "e2e p50 (s)", "e2e p99 (s)"):
        assert column in curve_head
    assert "![per-user against total output tokens/s](charts/pareto.png)" in text
    # the course's own sections come after the customer-facing part, under their own heading
    lab = text.index("## The course's lab sections")
    assert text.index("## Curves, knees and operating points") < lab < text.index("### Validation")
    # no latency samples beside this fixture notebook: the charts are absent, with the reason
    assert "_No latency histogram or requests-over-time chart for practice-baseline: no per-request" in text


def test_report_renders_as_a_report(default_report):
    """Rendered by a Markdown renderer: real tables (none inside a code fence), every image link to
    an existing file, no empty section, no Python values."""
    from markdown_it import MarkdownIt

    run_dir, path = default_report
    text = path.read_text()
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "```" not in text and "<pre>" not in html
    levels = run_report.levels_in(NOTEBOOK)["practice-baseline"]
    # headline, the curve, the comparison and the validation table at least
    assert html.count("<table>") >= 4
    assert f"<td>{levels[16]['output_tokens_per_s']:.1f}</td>" in html  # the c=16 row of the curve table
    images = re.findall(r'<img src="([^"]+)"', html)
    assert "charts/crowd.png" in images
    assert all((run_dir / src).is_file() for src in images)
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    assert all(body.strip().split("\n", 1)[1:] and body.split("\n", 1)[1].strip() for body in sections)
    for leak in ("None", "['", "{'", "[]"):
        assert leak not in text, leak


def test_a_section_without_records_says_why(tmp_path):
    manifest = {
        **MANIFEST,
        "steps": [
            {
                "id": "practice/sweep:practice-baseline",
                "kind": "sweep",
                "status": "failed",
                "reason": "port busy",
            },
            {"id": "report", "kind": "report", "status": "running"},
        ],
    }
    run_dir, path = write(tmp_path, notebook=None, manifest=manifest)
    text = path.read_text()
    assert "_No curve was measured: the sweep step failed: port busy._" in text
    assert "_No allocation was checked: this plan has no verify-allocation step._" in text
    assert "_No single-user measurement: this plan has no measure step._" in text
    assert "_No chart: no summarised curve finished a level._" in text
    assert not (run_dir / "charts" / "crowd.png").exists()


def test_html_is_the_same_report_with_the_charts_embedded(default_report):
    run_dir, path = default_report
    html = (run_dir / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<title>A small practice run</title>" in html
    sources = re.findall(r'<img src="([^"]+)"', html)
    assert sources and all(src.startswith("data:image/png;base64,") for src in sources)
    crowd = base64.b64encode((run_dir / "charts" / "crowd.png").read_bytes()).decode()
    assert f"data:image/png;base64,{crowd}" in sources
    tables = [line for line in path.read_text().splitlines() if line.startswith("|--")]
    assert html.count("<table>") == len(tables) >= 4  # every Markdown table, as a table


def test_skipped_steps_of_one_block_are_one_row():
    why = "optional block vllm skipped: not installed"
    steps = [
        {"id": f"vllm/{k}", "kind": k, "status": "skipped", "reason": why} for k in ("start", "sweep", "stop")
    ] + [{"id": "check", "kind": "check", "status": "passed", "duration_s": 1.25}]
    assert run_report._step_rows(steps) == [
        ["vllm/start … vllm/stop (3 steps)", "skipped", "—", why],
        ["check", "passed", "1.2", ""],
    ]


def test_cross_check_rows_mark_missing_figures():
    check = {
        "label": "llama-baseline",
        "concurrency": 4,
        "tool": "batched-bench",
        "verdict": "match",
        "ours": {"output_tokens_per_s": 50.0, "tpot_p50_s": 0.02},
        "theirs": {"output_tokens_per_s": 52.5, "tpot_p50_s": None},
        "output_tokens_per_s_ratio": 0.952,
    }
    assert record_sections.cross_check_rows([check]) == [
        ["llama-baseline c=4", "batched-bench", "50.0", "52.5", "0.95", "0.0200", "-", "match"]
    ]


def test_allocation_rows_from_the_records(tmp_path):
    """llama-server's pool in MiB (the caches summed) and vLLM's in tokens, each against its prediction."""
    from harness.records.engine import Allocation
    from harness.records.notebook import append_record

    book = tmp_path / "labbook.md"
    shutil.copy(NOTEBOOK, book)
    llama = Allocation(
        label="llama",
        engine="llama-server",
        model="Gemma 3 270m",
        log="llama.out",
        settings={"slots": 4, "ctx_per_slot": 2048, "cache_type": "f16", "swa_full": True, "kv_bytes": None},
        observed={"kv_caches": [{"mib": 24.0}, {"mib": 120.0}], "n_slots": 4},
        predicted={"log_lines": [], "pool_bytes": 150994944.0, "vllm_tokens": None},
        verdict="match",
        problems=[],
        recorded_at="2026-12-01T06:08:58+0000",
    )
    vllm = Allocation(
        label="vllm",
        engine="vllm",
        model="gemma-3-270m",
        log="vllm.out",
        settings={"slots": 4, "ctx_per_slot": 2048, "cache_type": None, "swa_full": False, "kv_bytes": 2**30},
        observed={"kv_tokens": 55000},
        predicted={"log_lines": [], "pool_bytes": None, "vllm_tokens": 55356},
        verdict="mismatch",
        problems=["the log holds 55,000 tokens of KV, the prediction 55,356"],
        recorded_at="2026-12-01T06:10:00+0000",
    )
    # a memory-fraction block (Track S's vllm-mem-a): the log's pool observed, nothing predicted for it
    fraction = Allocation(
        label="vllm-mem-a",
        engine="vllm",
        model="gemma-3-270m",
        log="vllm-mem-a.out",
        settings={
            "slots": 20,
            "ctx_per_slot": 4096,
            "cache_type": "f16",
            "swa_full": False,
            "kv_bytes": None,
        },
        observed={"kv_tokens": 69183},
        predicted={"log_lines": [], "pool_bytes": 1509949440.0, "vllm_tokens": 114807},
        verdict="observed",
        problems=[],
        recorded_at="2026-12-02T17:02:57+0000",
    )
    for rec in (llama, vllm, fraction):
        append_record(book, rec.to_dict(), "allocation")
    run_dir, path = write(tmp_path, notebook=book)
    rows = md_rows(path.read_text())
    observed_only = "— (observed only: a memory fraction sets the pool)"
    assert [
        "vllm-mem-a",
        "vllm",
        "20 x 4,096 tokens, f16",
        observed_only,
        "69,183 tokens",
        "observed",
        "—",
    ] in rows
    assert ["llama", "llama-server", "4 x 2,048 tokens, f16", "144.0 MiB", "144.0 MiB", "match", "—"] in rows
    assert [
        "vllm",
        "vllm",
        "4 x 2,048 tokens, KV 1.00 GiB",
        "55,356 tokens",
        "55,000 tokens",
        "mismatch",
        "the log holds 55,000 tokens of KV, the prediction 55,356",
    ] in rows


def test_the_serving_labs_sweeps_are_asked_only_of_a_plan_that_checks_the_lab(default_report, tmp_path):
    """Day 3's crowds (1, 2, 4, 8, 16) are not the serving lab's 1, 5, 10, 20 baseline: a plan with no
    check step gets no FAIL for the lab's missing sweeps, and the report says why; one with a check
    step does. The fixture's curve has 1, 2, 4, 8 and 16, and a prefix pair."""
    text = default_report[1].read_text()
    validation = text[text.index("### Validation") :]
    assert "The plan has no check step: the serving lab's 1, 5, 10, 20 baseline" in validation
    assert "baseline sweep (mixed prompts" not in validation
    assert "prefix pair: shared: practice-prefix-shared; control: practice-prefix-unique" in validation
    checked = {
        **MANIFEST,
        "steps": [*MANIFEST["steps"], {"id": "check", "kind": "check", "status": "passed"}],
    }
    (tmp_path / "checked").mkdir()
    text = write(tmp_path / "checked", manifest=checked)[1].read_text()
    validation = text[text.index("### Validation") :]
    assert (
        "| FAIL      | baseline sweep (mixed prompts, every level of 1, 5, 10, 20 completed): none found"
        in validation
    )
    assert "The plan has no check step" not in validation


@pytest.mark.parametrize("clock, drawn", [("samples", True), ("master", False)])
def test_requests_over_time_is_drawn_only_on_one_hosts_clock(tmp_path, clock, drawn):
    """Workers on other hosts stamp departures on their own clocks: one time line across them would
    subtract two hosts' clocks, so that chart is absent with the reason; one host's are drawn."""
    from harness.report.run_inputs import RunInputs

    rows = [
        {
            "label": "x",
            "concurrency": 2,
            "ok": True,
            "ttft_s": 0.1 + i / 100,
            "end_s": 1.0 + i / 10,
            "departed_monotonic_s": 1000.0 * (i % 2) + i,
            "worker": f"w{i % 2}",
        }
        for i in range(6)
    ]
    r = RunInputs(tmp_path, None, {}, {"x": {2: {"concurrency": 2, "wall_clock": clock}}}, 2.0, ["x"], {})
    r._cache["samples"] = [SampleLine.read(row) for row in rows]  # as RunInputs.samples reads them
    text = "\n".join(record_sections.sample_charts(r, "x"))
    assert "charts/x-latency.png" in text
    assert ("charts/x-over-time.png" in text) is drawn
    assert ("clocks are never set against each other" in text) is not drawn


def capacity_search(label: str, level: int, answer: str, tried: list):
    """A finished ``harness capacity`` record with a TTFT p95 criterion at 0.5 s."""
    from harness.records.sizing import Capacity, SearchCriterion, SearchRun

    run = SearchRun.of({"engine": "practice", "model": "m", "max_tokens": 32})
    criterion = SearchCriterion("ttft", "p95", 0.5, "TTFT p95 <= 0.5 s")
    runs = len(tried)
    return Capacity(
        label, run, "r1", criterion, 0.9, level, "exact", answer, tried, runs, runs, 12.0, 240.0, "done", "t"
    )


def test_an_admission_level_found_by_a_capacity_search_names_the_search():
    """Day 3's plan finds its admission level by `harness capacity`: the headline reads the search's
    typed record (the level it found and its answer), as the report writes it after the search."""
    from harness.records.sizing import Capacity, TriedRun

    levels = raw_levels()["practice-baseline"]
    c = sorted(levels)[0]
    tried = [TriedRun(c, 1, 0.14, 0.14, [0.13, 0.15], "pass", "within")]
    search = capacity_search("practice-admission", c, f"exactly {c} at once", tried)
    line = headlines.admission_outcome(levels, 2.0, search)
    assert line.startswith(f"c={c}") and f"(capacity search: exactly {c} at once)" in line
    missing = Capacity(**{**search.__dict__, "capacity": None, "answer": "none within the promise"})
    assert headlines.admission_outcome(levels, 2.0, missing) == "capacity search: none within the promise"


def test_the_capacity_searches_section_reads_each_search_from_the_notebook(tmp_path):
    """A run whose notebook holds a `harness capacity` record (Day 3's plan): the section lists it,
    read back as the typed record, with the search's confidence in its heading line."""
    from harness.records.sizing import TriedRun
    from harness.report.run_inputs import RunInputs

    tried = [
        TriedRun(4, 1, 0.14, 0.14, [0.13, 0.15], "pass", "within"),
        TriedRun(8, 1, 0.9, 0.9, None, "fail", "x"),
    ]
    search = capacity_search("day3-practice-capacity", 4, "4 at once", tried)
    (tmp_path / "labbook.md").write_text(json.dumps(search.to_dict()) + "\n")
    r = RunInputs(tmp_path, None, {}, {}, 0.5, [], {})
    text = "\n".join(record_sections.capacity_searches(r))
    assert "## Capacity found by search" in text and "(90%)" in text
    assert "day3-practice-capacity" in text and "4:pass -> 8:fail" in text
