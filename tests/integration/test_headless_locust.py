"""Headless Locust with the harness's users: the endpoint proof runs before any load (a closed port
or a server failing every chat ends the run in one line, exit 2, with no load sent), and a good run
ends with the exact numbers as a table."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.conftest import ROOT, free_port, kit_profile
from tests.integration.deadlines import START_S


def locust_cmd(host: str, *extra: str) -> list[str]:
    return [
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


def locust(host: str, *extra: str) -> subprocess.CompletedProcess:
    # a hang only: Locust's start, -t 4s and the stop's 20 s
    cmd = locust_cmd(host, *extra)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=START_S + 4 + 20, cwd=ROOT)


def harness_lines(done: subprocess.CompletedProcess) -> list[str]:
    return [x for x in (done.stdout + done.stderr).splitlines() if x.startswith("harness:")]


def test_a_closed_port_ends_in_one_line_before_any_load():
    port = free_port()  # nothing listens here
    done = locust(f"http://127.0.0.1:{port}")
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert harness_lines(done) == [
        f"harness: nothing answers at http://127.0.0.1:{port}; start the server or fix --host; "
        "no load was sent"
    ]
    assert "POST" not in out and "Traceback" not in out  # no request statistics: no load was run


def test_a_server_failing_every_chat_is_stopped_by_the_proof(practice):
    server = practice(kit_profile(name="fail-all", faults={"error_500_share": 1.0}))
    done = locust(server.root)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    (line,) = harness_lines(done)
    assert line.startswith("harness: the proof request failed (") and line.endswith("; no load was sent")
    assert "POST" not in out and "Traceback" not in out


def test_a_good_run_ends_with_the_exact_numbers_as_a_table(practice):
    server = practice("kit")
    # TTFT here is about 0.04 s (the kit profile's prefill and one step), tenths on a loaded machine;
    # 10 s is far from both, and from a slip of units (milliseconds would read 40 and more).
    done = locust(server.root, "--ttft-p95-max", "10")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "==> harness: exact numbers of this run (" in out
    rows = {x.split("  ")[0]: x.split()[-1] for x in out.splitlines() if x[:1].isalpha() and "  " in x}
    assert int(rows["requests"]) > 0 and rows["failed"] == "(0.0%)"
    assert float(rows["output tokens/s"]) > 0
    ttft = next(x for x in out.splitlines() if x.startswith("TTFT s")).split()[2:]
    assert len(ttft) == 4 and all(0 < float(v) < 10 for v in ttft)
    assert "harness thresholds passed" in out and "None" not in out


def test_the_proof_waits_for_an_engine_still_starting(tmp_path):
    """--proof-wait (compose sets it: the engine starts beside the master): a refusing endpoint is
    tried each second until it answers, here a practice server started only once Locust has said
    it is starting. Started 2 s after Locust instead, the server could be up before a loaded
    machine had started Locust at all, and the test would pass without any wait."""
    port = free_port()
    log = tmp_path / "locust.log"
    with open(log, "w") as fh:
        locust_proc = subprocess.Popen(
            locust_cmd(f"http://127.0.0.1:{port}", "--proof-wait", str(START_S)),
            stdout=subprocess.PIPE,
            stderr=fh,
            text=True,
            cwd=ROOT,
        )
    late = None
    try:
        # Locust logs its start just before the init event, whose listener proves the endpoint at
        # once; a practice server needs its own start (Python, gevent) after that to listen.
        deadline = time.monotonic() + START_S
        while "Starting Locust" not in log.read_text() and locust_proc.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        cmd = [sys.executable, "-m", "harness.cli", "practice", "--port", str(port)]
        late = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        out, _ = locust_proc.communicate(timeout=2 * START_S + 4 + 20)  # a hang only
        out += log.read_text()
        assert locust_proc.returncode == 0, out
        assert "==> harness: exact numbers of this run (" in out
    finally:
        if locust_proc.poll() is None:
            locust_proc.kill()
            locust_proc.wait()
        if late is not None:
            late.terminate()
            late.wait(20)
