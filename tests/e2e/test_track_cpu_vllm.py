"""The CPU plan's vLLM blocks, reduced in size, end to end against vLLM's CPU build (issue 15): the
plan's own vLLM stages (predict, the vllm and vllm-queue blocks, their summarise and compare steps,
the checks and the report) cut out of tracks/cpu.yaml so the practice server and llama-server
blocks are not run again. Assertions are on the records, the manifest and the ports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import yaml

from harness.io.notebook import read_records
from harness.io.ports import port_open
from harness.run.plans import find_plan
from tests.conftest import ROOT, free_port

pytestmark = [pytest.mark.vllm, pytest.mark.slow]  # skipped or failed in tests/conftest.py

REDUCED = {
    "REQUESTS": 4,
    "MIN_ROUNDS": 1,
    "MAX_TOKENS": 16,
    "PAIR_LEVELS": 1,
    "PAIR_REQUESTS": 4,
    "MEASURE_REPS": 1,
    "VLLM_QUEUE_LEVEL": 5,
    "VLLM_QUEUE_REQUESTS": 5,
}


def vllm_plan(path: Path) -> Path:
    """tracks/cpu.yaml with only the stages that are vLLM's (and the checks and the report)."""
    raw = yaml.safe_load(find_plan("cpu").read_text())
    keep = []
    for stage in raw["stages"]:
        if "engine" in stage:
            if stage["engine"] == "vllm-cpu":
                keep.append(stage)
            continue
        ((kind, options),) = stage.items() if isinstance(stage, dict) else ((stage, None),)
        if isinstance(options, dict) and options.get("needs") == "vllm":
            if kind == "compare":  # the pair with llama-server needs the llama block
                options["items"] = [p for p in options["items"] if "llama-baseline" not in p]
            keep.append(stage)
        elif kind in ("check", "report"):
            keep.append(stage)
    raw.update(name="cpu-vllm", title="CPU track, the vLLM blocks", stages=keep)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_the_vllm_blocks_of_the_cpu_plan(tmp_path):
    port = free_port()
    plan = vllm_plan(tmp_path / "cpu-vllm.yaml")
    sets = [a for k, v in {**REDUCED, "VLLM_PORT": port}.items() for a in ("--set", f"{k}={v}")]
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "harness.cli", "track", str(plan), "--run-dir", str(run_dir), *sets]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1500)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    final = json.loads((run_dir / "manifest.json").read_text())
    assert final["status"] == "passed"
    by_id = {s["id"]: s for s in final["steps"]}
    assert {s["status"] for s in final["steps"]} == {"passed"}, log[-3000:]
    assert by_id["vllm/recovery"]["reason"].startswith("idle by /metrics")
    # The hand-over (issue 29): vLLM's API server, engine core and worker (a tree of at least two,
    # read just before the stop) all gone at each stop.
    for block in ("vllm", "vllm-queue"):
        own = final["engines"][block]["memory_release"]["readings"][0]
        assert (own["alive"], own["released"], own["left"]) == (0, True, "no process of it alive"), own
        assert own["watched"] >= 2, own
    assert not port_open("127.0.0.1", port)
    assert not [
        p for p in psutil.process_iter(["cmdline"]) if f"--port {port}" in " ".join(p.info["cmdline"] or [])
    ]

    notebook = run_dir / "labbook.md"
    allocations = read_records(
        notebook, "allocation", select=lambda o: o.get("record") == "allocation"
    ).records
    assert {a["label"]: a["verdict"] for a in allocations} == {"vllm": "match", "vllm-queue": "match"}
    assert allocations[0]["observed"]["kv_tokens"] == 55_356
    levels = read_records(notebook, "level", select=lambda o: "concurrency" in o and "label" in o).records
    by_label = {}
    for r in levels:
        by_label.setdefault(r["label"], {})[r["concurrency"]] = r
    assert sorted(by_label["vllm-baseline"]) == [1, 5, 10, 20]
    assert all(r["failed"] == 0 for r in levels)
    busy = by_label["vllm-baseline"][20]["server_metrics"]
    assert busy["vllm:num_requests_waiting"]["max"] > 0  # 20 users, 4 sequences: the rest wait
    shared = by_label["vllm-prefix-shared"][1]
    assert shared["cached_tokens_mean"] > 0.5 * shared["prompt_tokens_mean"]
    queue = by_label["vllm-queue"][REDUCED["VLLM_QUEUE_LEVEL"]]["server_metrics"]
    assert queue["vllm:num_requests_running"]["max"] <= 2 and queue["vllm:num_requests_waiting"]["max"] > 0
    speed = read_records(
        notebook, "engine-speed", select=lambda o: o.get("test") in ("short", "long")
    ).records
    assert {r["test"] for r in speed} == {"short", "long"}
    assert all(r["process_tree"]["processes"] >= 3 for r in speed)  # API server, engine core, worker
    cross = read_records(notebook, "cross-check", select=lambda o: o.get("record") == "cross-check").records
    assert [(c["label"], c["tool"]) for c in cross] == [("vllm-baseline", "vllm-bench")]
    assert cross[0]["theirs"]["output_tokens_per_s"] > 0
    report = (run_dir / "report.md").read_text()
    assert "\n| vllm-baseline " in report and "## Cross-check against the engine's own generator" in report
    head = next(x for x in report.splitlines() if x.startswith("| vllm-baseline "))
    assert [c.strip() for c in head.split("|")[1:3]] == ["vllm-baseline", "vllm"]
