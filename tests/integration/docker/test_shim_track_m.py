"""Track M with the harness in a container, for real (`make track-m COMPOSE=1 REHEARSE=1 SMOKE=1`):
scripts/shim-track.sh with SHIM_VIA=1 runs Track M's plan, trimmed to one block of each kind of
engine (llama-server, mlx_lm.server's imitation, the control's measure) with its rehearsal overlay
at the smoke size, in the harness container (compose/shim.yaml's harness-host-paths: the checkout
and the model library at their host paths), its Locust master and workers there too, while the
host-side shim starts the engines natively. The preflight and measure read the host's memory from
the shim (GET /v1/host). Every step passes or is skipped with its reason, and nothing is left: no
container, no engine, the shim's port free. The whole plan, its variants and the lab's checks run
in .ci/run's native Track M rehearsal (the same plan, the same stand-ins); the variants' restarts
through the shim in test_shim_track.py.

It binds the lab's ports 8080 and 8081 (Track M's engines), so run it under
`flock /tmp/lab-ports.lock`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import psutil
import pytest

from harness.records.notebook import read_records
from harness.engines.ports import port_open
from tests.conftest import ROOT, free_port
from tests.integration.docker.conftest import (
    HARNESS_IMAGE,
    bridge_gateway,
    compose_project,
    docker,
    need_image,
    trimmed_plan,
)

# One block of each engine the shim starts for Track M, the steps that reach the host through it.
KEEP = {"llama": ("verify-allocation", "sweep"), "mlx": ("sweep",), "control": ("measure",)}


def engines_left(run_dir: Path) -> list[str]:
    """Processes whose command line names this run's directory (each engine's log is in it)."""
    left = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if str(run_dir) in cmd and "pytest" not in cmd:
            left.append(f"{proc.info['pid']}: {cmd[:120]}")
    return left


def test_track_m_rehearsed_with_the_harness_in_a_container_and_the_engines_through_the_shim(tmp_path):
    from harness.errors import InstallError
    from harness.engines import llama_cpu

    need_image(HARNESS_IMAGE)
    try:
        llama_cpu.find_model(), llama_cpu.find_llama_server()
    except InstallError as exc:
        pytest.skip(f"the CPU llama-server is not installed (make llama-cpu): {exc}")
    name = f"test-shim-m-{uuid.uuid4().hex[:8]}"
    project, run_dir, state = compose_project("shim-m-"), ROOT / "runs" / name, ROOT / "runs" / f"{name}-shim"
    shim_port = free_port()
    env = {
        **os.environ,
        "SHIM_VIA": "1",
        "SHIM_PORT": str(shim_port),
        "SHIM_LIBRARY": str(ROOT / "models"),
        "PROJECT": project,
        "SHIM_STATE": f"runs/{name}-shim",
    }
    plan = trimmed_plan(
        "track-m", KEEP, ROOT / "runs" / f"{name}-plan" / "track-m.yaml", ("models", "preflight"), True
    )
    plan = str(Path(plan).relative_to(ROOT))  # in the checkout: the container sees it at the same path
    argv = ["scripts/shim-track.sh", plan, "--rehearse", "--smoke", "--run-dir", f"runs/{name}"]
    try:
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
        out = done.stdout + done.stderr
        assert done.returncode == 0, out[-4000:]
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["status"] == "passed"
        odd = [(s["id"], s["status"], s.get("reason")) for s in manifest["steps"] if s["status"] != "passed"]
        assert all(st == "skipped" and reason for _, st, reason in odd), odd
        assert ("models", "skipped") in [(i, st) for i, st, _ in odd]  # the overlay's skip, with its reason
        # Every engine through the shim, reached at host.docker.internal from the container.
        engines = manifest["engines"]
        assert set(engines) == set(KEEP)
        for entry in engines.values():
            assert entry["command"].startswith(f"(shim http://host.docker.internal:{shim_port}) "), entry
            assert entry["running"] is False
        gateway = bridge_gateway()
        assert f"--host {gateway} " in engines["llama"]["command"]  # filled by the shim
        # The preflight and measure asked the shim about the host (one GET /v1/host each at least).
        shim_log = (state / "shim.log").read_text().splitlines()
        assert sum(" GET /v1/host 200 " in line for line in shim_log) >= 2, shim_log[-5:]
        starts = sum(re.search(r" POST /v1/engines/[\w-]+/start 200 ", line) is not None for line in shim_log)
        assert starts == len(KEEP)
        assert (state / "token").read_text().strip() not in "\n".join(shim_log)
        speeds = read_records(run_dir / "labbook.md", "engine-speed").records
        assert speeds and all(r["memory"]["hostname"] == os.uname().nodename for r in speeds)  # the host's
        levels = read_records(run_dir / "labbook.md", "level").records
        assert {r["label"] for r in levels} == {"llama-baseline", "mlx-baseline"}
        assert (run_dir / "report.md").is_file()
        assert "nothing left: no container of" in out
    finally:
        for c in docker(
            "ps", "-aq", "--filter", f"label=com.docker.compose.project={project}"
        ).stdout.split():
            docker("rm", "-f", c)
    assert not any(port_open("127.0.0.1", p) for p in (8080, 8081, shim_port))
    assert not port_open(gateway, shim_port)
    assert engines_left(run_dir) == []
    for folder in (run_dir, state, Path(ROOT / plan).parent):
        shutil.rmtree(folder, ignore_errors=True)
