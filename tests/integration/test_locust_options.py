"""Every numeric option of the Locust path (declared in harness/options, made into Locust's options
by harness/load/locust_options.py) is checked before anything starts: on Locust's command line and its
LOCUST_* variables (argparse's one line, status 2, no request sent, no process forked) and on the
web UI's start form (the same line, nothing started)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import requests

from tests.conftest import ROOT, free_port
from tests.integration.deadlines import START_S
from tests.integration.faults.hostile import HostileServer

LOCUST = [sys.executable, "-m", "locust", "-f", str(ROOT / "locustfiles" / "llm_user.py")]


@pytest.mark.parametrize(
    "args, line",
    [
        (
            ["--timeout", "0"],
            "argument --timeout/--request-timeout: takes a positive number of seconds, got 0.0",
        ),
        (["--request-timeout", "nan"], "argument --timeout/--request-timeout: takes a number from 0.001"),
        (["--idle-timeout", "-1"], "argument --idle-timeout: takes a number from 0 to 604800, got -1.0"),
        (["--telemetry", "nvml,bogus"], "argument --telemetry: 'nvml,bogus': give auto, none or any of"),
        (["--turns", "uniform:5-2"], "argument --turns: "),
        (["--max-tokens", "1"], "argument --max-tokens: takes a whole number from 2 to 1000000, got 1"),
        (["--max-tokens", "1.5"], "argument --max-tokens: takes a whole number from 2"),
        (["--temperature", "inf"], "argument --temperature: takes a number from 0 to 10, got inf"),
        (["--ttft-p95-max", "-2"], "argument --ttft-p95-max: takes a number from 0"),
        (["--fail-ratio-max", "1.5"], "argument --fail-ratio-max: takes a number from -1 to 1, got 1.5"),
        (["-u", "99999999999999999999"], "argument -u/--users: takes a whole number from 0 to 10000"),
        (["--processes", "-5"], "argument --processes: takes a whole number from -1 to"),
        (["--processes", "100000"], "argument --processes: takes a whole number from -1 to"),
    ],
)
def test_a_bad_number_stops_the_headless_run_in_one_line(args, line, tmp_path):
    with HostileServer("ok") as srv:
        cmd = [
            *LOCUST,
            "--headless",
            "-t",
            "5s",
            "--host",
            srv.root,
            "--labbook",
            str(tmp_path / "b.md"),
            *args,
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=START_S, cwd=ROOT)
        sent = list(srv.requests)
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(err) == 1 and line in err[0], done.stderr
    assert ": error: argument " in err[0] and "Traceback" not in done.stderr  # "locust: error: ..."
    assert not sent and not (tmp_path / "b.md").exists()  # nothing started (no request, no notebook)


def test_no_numeric_option_of_ours_goes_unchecked():
    # What is left with a plain int or float type after harness.load.locust_options ran is Locust's own
    # ports and waits; an option the harness adds without a declared range shows up here.
    code = (
        "import harness.load.locust_options\n"
        "from locust.argument_parser import get_parser\n"
        "acts = get_parser()._actions\n"
        "print(' '.join(sorted(max(a.option_strings, key=len) for a in acts if a.type in (int, float))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=START_S, cwd=ROOT
    )
    left = set(done.stdout.split())
    locusts_own = {"--autoquit", "--exit-code-on-error", "--expect-workers-max-wait", "--master-bind-port"}
    assert left == locusts_own | {"--master-port", "--web-port"}, (left, done.stderr)


def test_the_locust_variables_are_checked_too():
    env = {**os.environ, "LOCUST_TIMEOUT": "0", "LOCUST_HOST": "http://127.0.0.1:9"}
    done = subprocess.run(
        [*LOCUST, "--headless", "-t", "5s"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().endswith(
        ": error: argument --timeout/--request-timeout: takes a positive number of seconds, got 0.0"
    ), done.stderr


def test_good_numbers_still_run():
    with HostileServer("ok") as srv:
        cmd = [*LOCUST, "--headless", "-u", "1", "-r", "1", "-t", "2s", "--host", srv.root, "--only-summary"]
        cmd += [
            "--request-timeout",
            "5",
            "--idle-timeout",
            "0",
            "--max-tokens",
            "2",
            "--fail-ratio-max",
            "-1",
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=START_S, cwd=ROOT)
        sent = [r for r in srv.requests if r.startswith("POST")]
    assert done.returncode == 0 and sent, done.stderr[-2000:]


def load_bodies(srv) -> list[dict]:
    """The chat bodies this test's users sent: those after its endpoint proof, which START sends first.

    A request of the test before, sent just before its stop, can reach the server after that stop;
    it lands before the next proof, so it is not counted."""
    from harness.endpoints.proof import PROOF_PROMPT

    bodies = list(srv.bodies)
    proofs = [i for i, b in enumerate(bodies) if b["messages"][0]["content"] == PROOF_PROMPT]
    if not proofs:
        return []
    return [b for b in bodies[proofs[-1] + 1 :] if b["messages"][0]["content"] != PROOF_PROMPT]


def _wait_for(ready, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not ready() and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.mark.slow
def test_the_web_ui_form_refuses_a_bad_number_and_starts_nothing():
    """A bad number is refused in one line; a good one starts, and the next test's form counts."""
    port = free_port()
    with HostileServer("ok") as srv:
        cmd = [*LOCUST, "--host", srv.root, "--web-host", "127.0.0.1", "--web-port", str(port)]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + START_S  # Locust's start on a loaded machine
            while time.monotonic() < deadline:
                try:
                    requests.get(url, timeout=2)
                    break
                except requests.RequestException:
                    time.sleep(0.3)
            form = {"user_count": "1", "spawn_rate": "1", "host": srv.root, "max_tokens": "-5"}
            bad = requests.post(url + "/swarm", data=form, timeout=10).json()
            assert bad["success"] is False, bad
            assert bad["message"] == "--max-tokens takes a whole number from 2 to 1000000, got -5", bad
            users = requests.post(
                url + "/swarm", data={**form, "max_tokens": "8", "user_count": "1e9"}, timeout=10
            )
            assert users.json()["message"].startswith("--users takes a whole number from 0 to 10000")
            time.sleep(1.0)
            assert not srv.requests, srv.requests  # nothing started
            for tokens in ("8", "16"):  # each test sends what its own form said
                good = requests.post(url + "/swarm", data={**form, "max_tokens": tokens}, timeout=10).json()
                assert good["success"] is True, good
                _wait_for(lambda: load_bodies(srv), 60)  # waits only as long as it must
                requests.post(url + "/stop", timeout=10)
                _wait_for(
                    lambda: requests.get(url + "/stats/requests", timeout=5).json()["state"] == "stopped", 60
                )
                assert {b["max_tokens"] for b in load_bodies(srv)} == {int(tokens)}, srv.bodies
                srv.bodies.clear()  # the next test's bodies follow its own proof
        finally:
            proc.terminate()
            proc.wait(20)
