"""The host's facts from a real shim (GET /v1/host), as a containerised harness reads them: the
machine's name and memory, its fixed commands' answers, and `harness measure --snapshot-only` and
the preflight asking the shim (HARNESS_SHIM_URL) rather than reading the machine they run on."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from harness.engines import memory
from harness.endpoints import shim_host
from harness.records.notebook import validate
from tests.conftest import ROOT, free_port


def meminfo_kb(key: str) -> int:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))


def test_the_shim_reports_its_host(shim):
    facts = shim.get("/v1/host").json()
    assert facts["node"] == platform.node() and facts["system"] == platform.system()
    assert abs(facts["total_bytes"] - meminfo_kb("MemTotal") * 1024) < 2**20
    assert facts["swap_free_bytes"] == meminfo_kb("SwapFree") * 1024
    assert set(facts["commands"]) == {" ".join(argv) for argv in shim_module_commands()}
    assert facts["commands"]["vm_stat"] is None  # not a Mac: no vm_stat to answer
    assert shim.logged(" GET /v1/host 200 ", 1)


def shim_module_commands():
    import importlib.util

    spec = importlib.util.spec_from_file_location("harness_shim", ROOT / "shim" / "harness_shim.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.HOST_COMMANDS


def test_the_harness_asks_the_shim_when_it_is_named(shim, monkeypatch):
    monkeypatch.setenv(shim_host.URL_ENV, shim.url)
    monkeypatch.setenv(shim_host.TOKEN_ENV, str(shim.state / "token"))
    before = len(shim.log_lines())
    snap = memory.host_snapshot()
    validate(snap, "memory-snapshot")
    assert snap["hostname"] == platform.node()
    assert abs(snap["mem_total_mb"] - meminfo_kb("MemTotal") * 1024 / memory.MB) < 2
    assert shim_host.host_name() == platform.node()
    assert len(shim.logged(" GET /v1/host 200 ", 2, after=before)) == 2


def test_measure_and_the_preflight_ask_the_shim(shim, tmp_path):
    env = {
        **os.environ,
        shim_host.URL_ENV: shim.url,
        shim_host.TOKEN_ENV: str(shim.state / "token"),
    }
    out = tmp_path / "idle.json"
    before = len(shim.log_lines())
    for argv in (
        ["measure", "--snapshot-only", str(out)],
        ["preflight", "cpu-shim", "--run-dir", str(tmp_path)],
    ):
        subprocess.run(
            [sys.executable, "-m", "harness.cli", *argv],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert json.loads(out.read_text())["hostname"] == platform.node()
    asked = shim.logged(" GET /v1/host 200 ", 2, after=before)
    assert len(asked) == 2  # one for the snapshot, one for the preflight's commands
    # With the shim gone the harness says so, rather than reading the container it runs in.
    shim.stop()
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "measure", "--snapshot-only", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "did not answer /v1/host" in done.stderr


def test_the_preflight_reads_llama_servers_devices_through_the_shim(tmp_path, monkeypatch):
    from harness.errors import InstallError
    from harness.engines import llama_cpu
    from harness.run import preflight
    from harness.run.plans import load_plan
    from tests.integration.shim.conftest import start_shim, write_allow, write_plan

    try:
        model = llama_cpu.find_model()
        llama_cpu.find_llama_server()
    except InstallError as exc:
        pytest.skip(f"the CPU llama-server is not installed (make llama-cpu): {exc}")
    port = free_port()
    where = {"shim_url": f"http://127.0.0.1:{port}", "shim_token_file": str(tmp_path / "state" / "token")}
    plan_path = write_plan(tmp_path, [{"id": "llama", "engine": "llama-server-cpu-shim", "settings": where}])
    shim = start_shim(
        write_allow(tmp_path, plan_path, model.parent), tmp_path / "state", model.parent, port=port
    )
    try:
        listing = shim.get("/v1/engines/llama-server-cpu-shim/devices").json()
        assert "Available devices" in listing["devices"] and listing["returncode"] == 0
        plan = load_plan(str(plan_path))
        plan.variables["ALLOW_CPU"] = False  # a GPU track's rule: a CPU-only build fails
        found = preflight.plan_findings(
            plan, preflight.plan_targets(plan, tmp_path / "run"), tmp_path / "run"
        )
        accel = [f for f in found if f.check == "accelerator"]
        assert [f.level for f in accel] == ["FAIL"] and "CPU-only build" in accel[0].text
        assert shim.logged("GET /v1/engines/llama-server-cpu-shim/devices 200", 1)
    finally:
        shim.stop()
    # The shim gone: the preflight says so in a FAIL rather than skipping the check.
    found = preflight.plan_findings(plan, preflight.plan_targets(plan, tmp_path / "run"), tmp_path / "run")
    assert any(f.level == "FAIL" and "did not answer" in f.text for f in found if f.check == "accelerator")
