"""Headless Locust with the harness's users: the endpoint proof runs before any load (a closed port
or a server failing every chat ends the run in one line, exit 2, with no load sent), and a good run
ends with the exact numbers as a table."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.conftest import ROOT, free_port, kit_profile


def locust(host: str, *extra: str, timeout: float = 90) -> tuple[subprocess.CompletedProcess, float]:
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(ROOT / "locustfiles/llm_user.py"),
        "--headless",
        "-u",
        "4",
        "-r",
        "4",
        "-t",
        "4s",
        "--stop-timeout",
        "20",
        "--host",
        host,
        "--max-tokens",
        "8",
        "--only-summary",
        *extra,
    ]
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    return done, time.monotonic() - t0


def harness_lines(done: subprocess.CompletedProcess) -> list[str]:
    return [x for x in (done.stdout + done.stderr).splitlines() if x.startswith("harness:")]


def test_a_closed_port_ends_in_one_line_before_any_load():
    port = free_port()  # nothing listens here
    done, _ = locust(f"http://127.0.0.1:{port}")
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert harness_lines(done) == [
        f"harness: nothing answers at http://127.0.0.1:{port}; start the server or fix --host; "
        "no load was sent"
    ]
    assert "POST" not in out and "Traceback" not in out  # no request statistics: no load was run


def test_a_server_failing_every_chat_is_stopped_by_the_proof(practice):
    server = practice(kit_profile(name="fail-all", faults={"error_500_share": 1.0}))
    done, _ = locust(server.root)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    (line,) = harness_lines(done)
    assert line.startswith("harness: the proof request failed (") and line.endswith("; no load was sent")
    assert "POST" not in out and "Traceback" not in out


def test_a_good_run_ends_with_the_exact_numbers_as_a_table(practice):
    server = practice("kit")
    done, _ = locust(server.root, "--ttft-p95-max", "2.0")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "==> harness: exact numbers of this run (" in out
    rows = {x.split("  ")[0]: x.split()[-1] for x in out.splitlines() if x[:1].isalpha() and "  " in x}
    assert int(rows["requests"]) > 0 and rows["failed"] == "(0.0%)"
    assert float(rows["output tokens/s"]) > 0
    ttft = next(x for x in out.splitlines() if x.startswith("TTFT s")).split()[2:]
    assert len(ttft) == 4 and all(0 < float(v) < 2.0 for v in ttft)
    assert "harness thresholds passed" in out and "None" not in out


def test_the_proof_waits_for_an_engine_still_starting(tmp_path):
    """--proof-wait (compose sets it: the engine starts beside the master): a refusing endpoint is
    tried each second until it answers, here a practice server started 2 s after Locust."""
    import subprocess as sp

    port = free_port()
    cmd = [sys.executable, "-m", "harness.cli", "practice", "--port", str(port)]
    late = sp.Popen(
        ["sh", "-c", f"sleep 2; exec {' '.join(cmd)}"], stdout=sp.DEVNULL, stderr=sp.DEVNULL, cwd=ROOT
    )
    try:
        done, took = locust(f"http://127.0.0.1:{port}", "--proof-wait", "60")
        out = done.stdout + done.stderr
        assert done.returncode == 0, out
        assert took >= 2 and "==> harness: exact numbers of this run (" in out
    finally:
        late.terminate()
        late.wait(20)
