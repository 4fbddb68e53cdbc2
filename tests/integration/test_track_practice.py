"""`harness track practice`: the practice-only plan on a free port, interrupted inside a step and
resumed, then a first report with no engine to build, at smaller sizes than the plan's own. How long
it takes is a measurement, not asserted: a wall time of a dozen commands' starts and their load on
shared cores is the machine's, and a step that hangs is caught by its own bounds (the plan's) or by
the whole command's deadline below. The interruption and the resume are tested here, on the cheap
engine: the CPU plan's test (tests/e2e/test_track_cpu.py) runs only its llama-server blocks."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from harness.records.notebook import problems, read_records
from harness.engines.ports import port_open
from tests.conftest import ROOT
from tests.seeds import SEEDS, seeds_summarise_load

pytestmark = pytest.mark.slow

# The plan's steps, report and checks are under test, not its statistics: the lab's four levels
# kept (its checker asks for them), each at one round of short answers, the pair at 4 requests.
SMALL = [
    arg
    for k, v in {"REQUESTS": 8, "MIN_ROUNDS": 1, "MAX_TOKENS": 16, "PAIR_REQUESTS": 4}.items()
    for arg in ("--set", f"{k}={v}")
]
TARGET = "practice/sweep:practice-prefix-unique"  # the step interrupted


def manifest(run_dir) -> dict:
    try:
        return json.loads((run_dir / "manifest.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def status(run_dir, step_id: str) -> str | None:
    return next((s["status"] for s in manifest(run_dir).get("steps", []) if s["id"] == step_id), None)


def interrupt_inside(cmd: list[str], run_dir, log) -> dict:
    """Start the plan, SIGINT it once TARGET has run for a second, and return its manifest then."""
    with open(log, "w") as out:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while status(run_dir, TARGET) != "running":
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the plan never reached the step to interrupt"
        time.sleep(0.2)
    time.sleep(1.0)  # inside the sweep
    os.kill(proc.pid, signal.SIGINT)
    assert proc.wait(90) == 130, log.read_text()
    return manifest(run_dir)


def test_track_practice_interrupted_resumed_writes_a_report_on_a_free_port(tmp_path):
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "harness.cli", "track", "practice", "--run-dir", str(run_dir), *SMALL]
    first = interrupt_inside(cmd, run_dir, tmp_path / "first.txt")
    port = int(
        re.search(r"==> PRACTICE_PORT: free port (\d+)", (tmp_path / "first.txt").read_text()).group(1)
    )
    assert first["status"] == "interrupted" and status(run_dir, TARGET) == "interrupted"
    finished_before = [s["id"] for s in first["steps"] if s["status"] == "passed"]
    assert "practice/sweep:practice-baseline" in finished_before
    assert not port_open("127.0.0.1", port), "the practice server was left running after the interruption"

    done = subprocess.run(
        [*cmd, "--resume"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,  # a hang only: about 2 minutes here, 3 times that for a loaded machine
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    port = int(re.search(r"==> PRACTICE_PORT: free port (\d+)", done.stdout).group(1))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    commands = [s.get("command") or "" for s in manifest["steps"]]
    assert any(f"practice --profile kit --host 127.0.0.1 --port {port} " in c for c in commands), commands
    assert not port_open("127.0.0.1", port)  # stopped, the port proven free
    statuses = {s["id"]: s["status"] for s in manifest["steps"]}
    assert set(statuses.values()) == {"passed"}, statuses
    by_id = {s["id"]: s for s in manifest["steps"]}
    for step_id in finished_before:  # what had finished is not run again; the engine is restarted
        if not step_id.endswith("/start"):
            assert by_id[step_id]["attempts"] == 1, f"{step_id} was repeated on --resume"
    assert by_id[TARGET]["attempts"] == 2 and by_id["practice/start"]["attempts"] == 2
    levels = read_records(
        run_dir / "labbook.md", "level", select=lambda o: "concurrency" in o and "label" in o
    ).records
    counts = Counter((r["label"], r["concurrency"]) for r in levels)
    assert [counts[("practice-baseline", c)] for c in (1, 5, 10, 20)] == [1, 1, 1, 1]  # not repeated
    kinds = {"sweep:practice-baseline", "prefix", "probe", "measure", "admission", "recovery", "report"}
    assert all(any(k in sid for sid in statuses) for k in kinds), statuses
    html = (run_dir / "report.html").read_text()
    assert "practice-baseline" in html and "<img" in html
    # The energy sections, end to end from the practice server's IMITATION power: each
    # level record carries it labelled, the report draws and tables it and says IMITATION first.
    book = run_dir / "labbook.md"
    records = [json.loads(line) for line in book.read_text().splitlines() if line.startswith("{")]
    baseline = [r for r in records if r.get("label") == "practice-baseline" and "concurrency" in r]
    assert len(baseline) == 4 and all(problems(r, "level") == [] for r in baseline)
    for r in baseline:
        e = r["energy"]
        assert e["source"] == "practice" and e["label"] == "imitation" and e["idle_power_w"] == 35.0
        assert e["mean_power_w"] >= 35.0 and e["j_per_output_token"] > 0 and e["output_tokens_per_j"] > 0
        assert r["cost"]["basis"] == "per-kwh" and r["cost"]["per_million_output_tokens"] > 0
    report = (run_dir / "report.md").read_text()
    energy = report.split("## Energy and cost", 1)[1].split("\n## ", 1)[0]
    assert energy.lstrip().startswith("**IMITATION**: these watts and joules are made up")
    assert "](charts/energy.png)" in energy and (run_dir / "charts" / "energy.png").is_file()
    assert "practice imitation of kit (IMITATION)" in energy and "at the operating point (c=" in energy
    # the server's /metrics and the client's own figures at the same instants, side by side
    over_time = report.split("## The server and the client over time", 1)[1].split("\n## ", 1)[0]
    assert all(r["series"]["client"]["completed_requests"][-1] == r["completed"] for r in baseline)
    assert "](charts/practice-baseline-server-client.png)" in over_time
    assert (run_dir / "charts" / "practice-baseline-server-client.png").is_file()
    capacity = (
        r"capacity within the promise [^\n]*; \d+ at once at \d+ W, [\d.]+ J per output token \(IMITATION\)"
    )
    assert re.search(capacity, report), report
    # the engine table's energy: the speed tests' repetitions, the same imitation, labelled
    speeds = [r for r in records if r.get("test") in ("short", "long")]
    assert len(speeds) == 2 and all(problems(r, "engine-speed") == [] for r in speeds)
    assert all(r["energy"]["label"] == "imitation" and r["energy"]["energy_j"] > 0 for r in speeds)
    single = report.split("## Single user", 1)[1].split("\n## ", 1)[0]
    engine_energy = single.split("Energy (single user, over each test's repetitions):", 1)[1]
    assert engine_energy.lstrip().startswith("IMITATION: these figures are not a measurement")
    assert "practice imitation of kit (IMITATION)" in engine_energy
    # The notebook as the lab's own checker reads it: the seeds' summarise-load.py (where the seed
    # pages are here) and the harness's drop-in, each with --check.
    notebook = str(run_dir / "labbook.md")
    checks = [[sys.executable, "-m", "harness.cli", "summarise", "--labbook", notebook, "--check"]]
    seed = seeds_summarise_load(SEEDS)
    if seed is not None:
        script = tmp_path / "summarise-load.py"
        script.write_text(seed)
        checks.append([sys.executable, str(script), "--labbook", notebook, "--check"])
    for check in checks:
        verdict = subprocess.run(check, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert verdict.returncode == 0, verdict.stdout[-3000:] + verdict.stderr[-1000:]
        assert "FAIL" not in verdict.stdout.replace("0 fail", ""), verdict.stdout[-3000:]
