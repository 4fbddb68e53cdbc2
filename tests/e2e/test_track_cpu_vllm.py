"""The CPU plan's vLLM blocks against vLLM's CPU build, cut to what no rehearsal runs:
the queueing block (2 sequences and a pool just over one full-length request, so requests wait)
with its allocation check, recovery and hand-over, then the report. The plan's
`vllm` block (baseline sweep, cross-check, prefix pair, probe, measure, admission) runs the same
steps through the same launcher as the vLLM blocks of Track N, whose smoke rehearsal runs in
CI (`.ci/run`); running it here again would start vLLM twice more for nothing new. Assertions are
on the records, the manifest and the ports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import yaml

from harness.records.notebook import read_records
from harness.engines.ports import port_open
from harness.run.plans import find_plan
from tests.conftest import ROOT, free_port

pytestmark = [pytest.mark.vllm, pytest.mark.slow]  # skipped or failed in tests/conftest.py

# 6 at once on 2 sequences: four wait, the last two for two whole answers. The /metrics sampler reads
# every 0.5 s, so the wait must outlast several readings: at 64 tokens an answer took about 2 s here
# (TPOT 32 ms), a wait of about 4 s. At 3 on 2 with 8-token answers (0.3 s) the one wait fell
# between two readings on 2026-12-04 and the level recorded no request waiting.
REDUCED = {"VLLM_QUEUE_LEVEL": 6, "VLLM_QUEUE_REQUESTS": 6, "MAX_TOKENS": 64}


def queue_plan(path: Path) -> Path:
    """tracks/cpu.yaml with only its queueing block (its `base: vllm` settings folded in) and the
    report."""
    raw = yaml.safe_load(find_plan("cpu").read_text())
    blocks = {s["id"]: s for s in raw["stages"] if isinstance(s, dict) and "engine" in s}
    base, queue = blocks["vllm"], blocks["vllm-queue"]
    assert queue["base"] == "vllm"
    block = {
        **{k: v for k, v in base.items() if k not in ("steps", "optional")},
        **{k: v for k, v in queue.items() if k != "base"},
        "settings": {**base["settings"], **queue["settings"]},
        "record": {**base["record"], **queue["record"]},
    }
    keep = [block, "report"]  # the lab's check wants the whole plan's records: the rehearsals run it
    raw.update(name="cpu-vllm-queue", title="CPU track, vLLM's queueing block", stages=keep)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_the_vllm_queueing_block_of_the_cpu_plan(tmp_path):
    port = free_port()
    plan = queue_plan(tmp_path / "cpu-vllm-queue.yaml")
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
    assert by_id["vllm-queue/recovery"]["reason"].startswith("idle by /metrics")
    # The hand-over: vLLM's API server, engine core and worker (a tree of at least two,
    # read just before the stop) all gone at the stop.
    own = final["engines"]["vllm-queue"]["memory_release"]["readings"][0]
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
    assert [(a["label"], a["verdict"]) for a in allocations] == [("vllm-queue", "match")]
    # 44,040,192 bytes in 128-token blocks shared by six groups of 3 layers: the pool vLLM's log
    # states is the one the arithmetic predicted
    assert allocations[0]["observed"]["kv_tokens"] == allocations[0]["predicted"]["vllm_tokens"] > 0
    levels = read_records(notebook, "level", select=lambda o: "concurrency" in o and "label" in o).records
    assert [(r["label"], r["concurrency"], r["failed"]) for r in levels] == [
        ("vllm-queue", REDUCED["VLLM_QUEUE_LEVEL"], 0)
    ]
    queue = levels[0]["server_metrics"]
    assert queue["vllm:num_requests_running"]["max"] <= 2 and queue["vllm:num_requests_waiting"]["max"] > 0
    report = (run_dir / "report.md").read_text()
    assert "\n| vllm-queue " in report
