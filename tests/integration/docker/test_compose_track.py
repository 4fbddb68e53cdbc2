"""The CPU track through Compose, for real (tracks/cpu-compose.yaml, its blocks with their sweeps and
the allocation check): the practice server and the CPU
llama-server in containers started by the compose launcher, every sweep's load from two Locust
worker containers beside the engine, the master on the host writing the records; an interrupted
run (SIGTERM) leaving no container and no busy port; a missing image refused in one line.

Each test runs in its own Compose project (HARNESS_COMPOSE_PROJECT) on free ports, and removes
whatever that project left, pass or fail."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from harness.records.notebook import read_records
from harness.engines.ports import port_open
from tests.conftest import ROOT, free_port
from tests.integration.docker.conftest import (
    CPU_PLAN_REDUCED,
    HARNESS_IMAGE,
    LLAMA_CPU_IMAGE,
    docker,
    need_image,
    remove_project,
    compose_project,
    trimmed_plan,
)

MODEL = ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"
# two levels: the path is under test (the lab's checks, which want 1, 5, 10 and 20, are not run here)
REDUCED = {**CPU_PLAN_REDUCED, "LEVELS": "1,5"}


# The compose path: each engine's container, the sweeps' worker containers and the host's own
# llama-server beside them; the lab's other steps run in tests/e2e's CPU track on the host.
KEEP = {"practice": ("sweep",), "llama": ("verify-allocation", "sweep"), "llama-host": ("sweep",)}


def project_containers(project: str) -> list[str]:
    return docker("ps", "-aq", "--filter", f"label=com.docker.compose.project={project}").stdout.split()


@pytest.fixture
def compose_run(tmp_path):
    """track(*extra, env=...) -> (Popen, run_dir, ports): `harness track cpu-compose` reduced, in a
    project of its own; every container of that project is removed afterwards."""
    project = compose_project()
    procs: list[subprocess.Popen] = []

    def track(extra_env: dict | None = None, **sets: str):
        ports = {"PRACTICE_PORT": free_port(), "LLAMA_PORT": free_port()}
        values = {**REDUCED, **{k: str(v) for k, v in ports.items()}, **sets}
        argv = [
            sys.executable,
            "-m",
            "harness.cli.entry",
            "track",
            trimmed_plan("cpu-compose", KEEP, tmp_path / "cpu-compose-trimmed.yaml"),
            "--run-dir",
            str(tmp_path / "run"),
        ]
        for k, v in values.items():
            argv += ["--set", f"{k}={v}"]
        env = {**os.environ, "HARNESS_COMPOSE_PROJECT": project, **(extra_env or {})}
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        procs.append(proc)
        return proc, tmp_path / "run", ports

    yield track, project
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    remove_project(project)


def need_all() -> None:
    need_image(HARNESS_IMAGE)
    need_image(LLAMA_CPU_IMAGE)
    if not MODEL.is_file():
        pytest.skip(f"{MODEL} is missing: run `make llama-cpu`")


def level_records(run_dir) -> list[dict]:
    return read_records(run_dir / "labbook.md", "level", select=lambda o: "record" not in o).records


def test_the_cpu_track_through_compose_with_two_worker_containers(compose_run):
    need_all()
    track, project = compose_run
    proc, run_dir, ports = track()
    output, _ = proc.communicate(timeout=1500)
    assert proc.returncode == 0, output[-4000:]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "passed"
    for block in ("practice", "llama"):
        engine = manifest["engines"][block]
        assert f"-p {project} " in engine["command"] and " up -d --no-deps --no-build " in engine["command"]
        assert engine["version"].startswith("sha256:") or "@sha256:" in engine["version"], engine
        assert engine["memory_mb"] > 1 and engine["running"] is False
        assert (run_dir / "engines" / f"{block}.out").stat().st_size > 0  # the container's log, followed
    assert "version: " in manifest["engines"]["llama"]["version"]  # llama-server --version, in the container
    stops = {s["id"]: s for s in manifest["steps"] if s["id"].endswith("/stop")}
    assert all("is free" in s["reason"] for s in stops.values()), stops
    # The sweeps' load came from two worker containers; the master here wrote the usual records.
    sweep_log = (run_dir / "steps" / "llama__sweep_llama-baseline.txt").read_text()
    assert "--worker-command" in sweep_log and "--worker-url http://llama-cpu:8080" in sweep_log
    assert "load from 2 Locust worker process(es)" in sweep_log
    levels = {(r["label"], r["concurrency"]): r for r in level_records(run_dir)}
    for label in ("practice-baseline", "llama-baseline", "llama-host"):
        for c in (1, 5):
            assert levels[(label, c)]["completed"] >= 4 and levels[(label, c)]["failed"] == 0, levels[
                (label, c)
            ]
    # The client CPU is the worker containers' own processes (not the compose clients that started them).
    assert levels[("llama-baseline", 5)]["client_cpu"] > 0
    samples = [json.loads(x) for x in (run_dir / "labbook.samples.jsonl").read_text().splitlines()]
    by_label = {s.get("label") for s in samples}
    assert {"practice-baseline", "llama-baseline", "llama-host"} <= by_label
    assert set(samples[0]) == set(samples[-1])  # compose and host samples: one shape
    assert project_containers(project) == []
    assert not port_open("127.0.0.1", ports["PRACTICE_PORT"]) and not port_open(
        "127.0.0.1", ports["LLAMA_PORT"]
    )


def test_sigterm_stops_the_containers_the_run_started(compose_run):
    need_all()
    track, project = compose_run
    proc, run_dir, ports = track(REQUESTS="40", MAX_TOKENS="64")
    manifest = run_dir / "manifest.json"
    deadline = time.monotonic() + 300
    # SIGTERM in the middle of the practice server's sweep, its worker containers running.
    while time.monotonic() < deadline:
        steps = json.loads(manifest.read_text())["steps"] if manifest.is_file() else []
        sweeping = any(
            s["id"] == "practice/sweep:practice-baseline" and s["status"] == "running" for s in steps
        )
        if sweeping and len(project_containers(project)) >= 3:  # the engine and two workers
            break
        assert proc.poll() is None, proc.stdout.read()[-3000:]
        time.sleep(0.5)
    else:
        pytest.fail("the practice sweep never ran with its two worker containers")
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=180)
    assert proc.returncode == 130, output[-3000:]
    assert "interrupted; the engine was stopped" in output
    assert json.loads(manifest.read_text())["status"] == "interrupted"
    assert project_containers(project) == [], docker("ps", "-a").stdout
    assert not port_open("127.0.0.1", ports["PRACTICE_PORT"])


def test_a_missing_image_fails_the_start_in_one_line_without_pulling(compose_run):
    need_all()
    track, project = compose_run
    missing = "llm-harness/harness:never-built"
    before = docker("images", "-q").stdout
    t0 = time.monotonic()
    proc, run_dir, _ = track(extra_env={"HARNESS_IMAGE": missing})
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 1, output[-3000:]
    # Far from the failure it guards against: a start that waited for health would take the
    # engine's whole health bound (300 s); one that failed at once takes the command's own start.
    assert time.monotonic() - t0 < 240
    line = next(x for x in output.splitlines() if "FAIL  practice/start" in x)
    assert f"image {missing} is not present; build it: make images" in line
    assert "Traceback" not in output and "Pulling" not in output
    assert docker("images", "-q").stdout == before  # nothing pulled or built
    assert project_containers(project) == []
