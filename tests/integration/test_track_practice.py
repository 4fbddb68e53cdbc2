"""`harness track practice`: the practice-only plan on a free port, a first report with no engine
to build, at smaller sizes than the plan's own. How long it takes is a measurement, not asserted:
a wall time of a dozen commands' starts and their load on shared cores is the machine's, and a
step that hangs is caught by its own bounds (the plan's) or by the whole command's deadline below."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from harness.io.notebook import problems
from harness.io.ports import port_open
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


def test_track_practice_writes_a_report_on_a_free_port(tmp_path):
    run_dir = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "track", "practice", "--run-dir", str(run_dir), *SMALL],
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
    kinds = {"sweep:practice-baseline", "prefix", "probe", "measure", "admission", "recovery", "report"}
    assert all(any(k in sid for sid in statuses) for k in kinds), statuses
    html = (run_dir / "report.html").read_text()
    assert "practice-baseline" in html and "<img" in html
    # The energy sections, end to end from the practice server's IMITATION power (issue 38): each
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
