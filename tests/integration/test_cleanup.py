"""harness cleanup after a run that died with its server still up: the server is found by the run's
own manifest (never by process name), stopped, and its port proven free."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import yaml

from harness.run import cleanup
from harness.engines.ports import port_open
from tests.conftest import ROOT, assert_nothing_left, free_port
from tests.integration.deadlines import START_S


def start_long_run(tmp_path, **popen_kw):
    """`harness track` with a practice server and a long sweep, once the manifest says the server
    runs: (process, runs directory, the server's manifest entry, its port)."""
    port = free_port()
    plan = {
        "schema_version": 1,
        "name": "long",
        "title": "a long run",
        "variables": {},
        "stages": [
            {
                "id": "practice",
                "engine": "practice",
                "settings": {"port": port},
                "steps": [
                    {"sweep": {"label": "long", "concurrency": "1", "requests": 400, "max_tokens": 64}}
                ],
            }
        ],
    }
    path = tmp_path / "long.yaml"
    path.write_text(yaml.safe_dump(plan))
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "track", str(path), "--run-dir", str(runs / "r1")],
        cwd=ROOT,
        **popen_kw,
    )
    deadline = time.monotonic() + 2 * START_S  # two starts on a loaded machine: the run's, its server's
    entry = {}
    while not entry.get("running"):
        assert time.monotonic() < deadline and proc.poll() is None, "the run never started its server"
        time.sleep(0.2)
        try:
            entry = json.loads((runs / "r1" / "manifest.json").read_text())["engines"].get("practice", {})
        except (OSError, json.JSONDecodeError, KeyError):
            entry = {}
    return proc, runs, entry, port


def test_cleanup_after_a_killed_run_leaves_nothing_running(tmp_path):
    proc, runs, entry, port = start_long_run(tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.kill(proc.pid, signal.SIGKILL)  # the harness dies; its server does not
    proc.wait(10)
    assert port_open("127.0.0.1", port) and psutil.pid_exists(entry["pid"])
    assert [s["block"] for s in cleanup.recorded_servers(runs)] == ["practice"]

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "cleanup",
            "--runs",
            str(runs),
            "--models",
            str(tmp_path / "models"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=START_S,  # a hang only: a harness command's start on a loaded machine
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"r1/practice: pid {entry['pid']} stopped; port {port} is free" in done.stdout
    assert not port_open("127.0.0.1", port)
    assert (
        not psutil.pid_exists(entry["pid"]) or psutil.Process(entry["pid"]).status() == psutil.STATUS_ZOMBIE
    )
    assert cleanup.recorded_servers(runs) == []
    again = subprocess.run(
        [sys.executable, "-m", "harness.cli", "cleanup", "--runs", str(runs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=START_S,  # a hang only: a harness command's start on a loaded machine
    )
    assert "servers our runs left running: 0" in again.stdout


def test_a_reused_pid_is_never_killed(tmp_path):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        entry = {
            "manifest": tmp_path / "m.json",
            "block": "x",
            "pid": other.pid,
            "command": "/opt/llama-server -m x",
            "port": None,
        }
        (tmp_path / "m.json").write_text(json.dumps({"engines": {"x": {"running": True}}}))
        assert cleanup.stop_server(entry).startswith("already gone")
        assert other.poll() is None  # a stranger holding a recycled pid is left alone
    finally:
        other.kill()


def test_after_a_failed_run_cleanup_finds_nothing_left(tmp_path):
    port = free_port()
    plan = {
        "schema_version": 1,
        "name": "fails",
        "title": "a run whose sweep fails",
        "variables": {},
        "stages": [
            {
                "id": "practice",
                "engine": "practice",
                "settings": {"port": port},
                "steps": [
                    {
                        "sweep": {
                            "label": "wrong",
                            "concurrency": "1",
                            "requests": 2,
                            "model": "no-such-model",
                        }
                    },
                    "probe",
                ],
            }
        ],
    }
    path = tmp_path / "fails.yaml"
    path.write_text(yaml.safe_dump(plan))
    runs = tmp_path / "runs"
    run = subprocess.run(
        [sys.executable, "-m", "harness.cli", "track", str(path), "--run-dir", str(runs / "r1")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    steps = {s["id"]: s["status"] for s in json.loads((runs / "r1" / "manifest.json").read_text())["steps"]}
    assert run.returncode == 1 and steps["practice/sweep:wrong"] == "failed", run.stdout[-2000:]
    assert_nothing_left(runs, tmp_path / "models", (port,))


def test_a_terminated_run_stops_its_own_server(tmp_path):
    """SIGTERM (a CI timeout, `kill`) is taken as Ctrl-C: the run stops the server it started."""
    proc, runs, entry, port = start_long_run(
        tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    time.sleep(1.0)  # into the sweep step
    proc.terminate()
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert "Traceback" not in out
    assert not port_open("127.0.0.1", port)
    assert (
        not psutil.pid_exists(entry["pid"]) or psutil.Process(entry["pid"]).status() == psutil.STATUS_ZOMBIE
    )
    assert cleanup.recorded_servers(runs) == []


def test_cleanup_lists_what_each_install_made_here(tmp_path):
    """On this checkout: `make setup`'s environment is listed with its size and its remover, and the
    models folder given is read (an empty one: the model library's line says it is not here)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "cleanup",
            "--runs",
            str(tmp_path / "runs"),
            "--models",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("==> what each install made: ") for line in lines), done.stdout
    venv = next(line for line in lines if f"| {ROOT / '.venv'} " in line)
    cells = [c.strip() for c in venv.split("|")[1:-1]]
    assert cells[0] == "make setup" and cells[3].endswith(" GB") and float(cells[3].split()[0]) > 0.05
    assert cells[4] == f"rm -rf {ROOT / '.venv'}"
    assert (
        f"    not here: {tmp_path}/<owner>/<repo> (made by make models TRACK=... (harness models))" in lines
    )
