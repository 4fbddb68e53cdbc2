"""The Linux path of the containerised harness, for real (`make track-cpu COMPOSE=1 SHIM=1`):
scripts/shim-track.sh runs tracks/cpu-shim.yaml with the harness and its Locust master and workers
in the harness container, and the real CPU llama-server and the practice server started natively
by the host-side shim. Every step passes, the records are in the host's run directory, and nothing
is left: no container of the project, no engine, the shim's port free.

Reduced sizes on free ports, two levels: the path is under test, not the lab's checks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from harness.records.notebook import read_records
from harness.engines.ports import port_open
from tests.conftest import ROOT, free_port
from tests.integration.docker.conftest import (
    bridge_gateway,
    CPU_PLAN_REDUCED,
    HARNESS_IMAGE,
    compose_project,
    docker,
    need_image,
    trimmed_plan,
)

REDUCED = {**CPU_PLAN_REDUCED, "LEVELS": "1,5", "VARIANT_LEVEL": "5", "VARIANT_REQUESTS": "5"}
# The shim path for both kinds of engine and a variant's restart through it; the lab's other steps
# run in tests/e2e's CPU track on the host, and Track M's shim test runs a whole plan this way.
KEEP = {
    "practice": ("sweep",),
    "llama": ("verify-allocation", "sweep"),
    "llama-slots2": ("verify-allocation", "sweep"),
}


def test_the_cpu_plan_with_the_harness_in_a_container_and_the_engines_through_the_shim():
    need_image(HARNESS_IMAGE)
    if not (ROOT / "models" / "gemma-3-270m-q4_k_m.gguf").is_file():
        pytest.skip("the CPU model is not installed (make llama-cpu)")
    name = f"test-shim-{uuid.uuid4().hex[:8]}"
    project, run_dir, state = compose_project("shim-"), ROOT / "runs" / name, ROOT / "runs" / f"{name}-shim"
    ports = {"LLAMA_PORT": free_port(), "PRACTICE_PORT": free_port()}
    shim_port = free_port()
    plan = trimmed_plan("cpu-shim", KEEP, ROOT / "runs" / f"{name}-plan" / "cpu-shim-trimmed.yaml")
    argv = ["scripts/shim-track.sh", str(Path(plan).relative_to(ROOT)), "--run-dir", f"runs/{name}"]
    for k, v in {**REDUCED, **ports}.items():
        argv += ["--set", f"{k}={v}"]
    env = {**os.environ, "SHIM_PORT": str(shim_port), "PROJECT": project, "SHIM_STATE": f"runs/{name}-shim"}
    try:
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3000)
        out = done.stdout + done.stderr
        assert done.returncode == 0, out[-4000:]
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["status"] == "passed"
        # Every step passed; admission may be skipped, with its reason, when no level met the objective.
        assert {s["status"] for s in manifest["steps"]} == {"passed"}, manifest["steps"]
        llama = manifest["engines"]["llama"]
        assert llama["command"].startswith("(shim http://host.docker.internal:")
        gateway = bridge_gateway()
        assert f"--host {gateway} " in llama["command"]  # the shim's bind, filled by the shim
        assert llama["memory_mb"] > 50 and llama["running"] is False
        levels = read_records(run_dir / "labbook.md", "level").records
        assert {r["label"] for r in levels} >= {"llama-baseline", "practice-baseline", "llama-slots2"}
        assert (run_dir / "report.md").is_file()
        assert "nothing left: no container of" in out
        shim_log = (state / "shim.log").read_text().splitlines()
        assert any(" POST /v1/engines/llama-server-cpu-shim/start 200 " in line for line in shim_log)
        assert (state / "token").read_text().strip() not in "\n".join(shim_log)
    finally:
        # Nothing should be there (the script proved it); whatever is, is removed.
        for c in docker(
            "ps", "-aq", "--filter", f"label=com.docker.compose.project={project}"
        ).stdout.split():
            docker("rm", "-f", c)
    assert not any(port_open("127.0.0.1", p) for p in (*ports.values(), shim_port))
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.rmtree(state, ignore_errors=True)
    shutil.rmtree(Path(plan).parent, ignore_errors=True)
