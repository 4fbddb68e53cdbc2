"""The shim launcher against the real CPU llama-server (make llama-cpu), started natively by the
shim: started, healthy, one answer, its version and memory, its log in the run directory, and
stopped with its port free; and a short plan through `harness track` whose manifest and records
are the host launcher's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.bounds import Bounds
from harness.endpoints import http_client as http
from harness.engines.ports import port_open
from harness.run.context import block_context
from harness.run.launcher_table import make_launcher
from harness.engines.launchers.shim import ShimLauncher
from harness.run.plans import load_plan
from tests.conftest import ROOT, free_port
from tests.integration.shim.conftest import start_shim, write_allow, write_plan

MODELS = ROOT / "models"
MODEL = "gemma-3-270m-q4_k_m.gguf"


@pytest.fixture(scope="module")
def llama_cpu():
    from harness.errors import InstallError
    from harness.engines import llama_cpu

    try:
        return llama_cpu.find_llama_server(), llama_cpu.find_model()
    except InstallError as exc:
        pytest.skip(f"the CPU llama-server is not installed (make llama-cpu): {exc}")


def _plan(tmp_path: Path, shim_port: int, port: int, steps: list) -> Path:
    settings = {
        "model": MODEL,
        "port": port,
        "slots": 2,
        "ctx_per_slot": 1024,
        "shim_url": f"http://127.0.0.1:{shim_port}",
        "shim_token_file": str(tmp_path / "state" / "token"),
    }
    return write_plan(
        tmp_path, [{"id": "llama", "engine": "llama-server-cpu-shim", "settings": settings, "steps": steps}]
    )


def test_the_shim_launcher_starts_the_real_llama_server_and_it_answers(tmp_path, llama_cpu):
    shim_port, port = free_port(), free_port()
    plan_path = _plan(tmp_path, shim_port, port, [])
    shim = start_shim(write_allow(tmp_path, plan_path, MODELS), tmp_path / "state", MODELS, port=shim_port)
    try:
        plan = load_plan(str(plan_path))
        ctx = block_context(plan, plan.blocks["llama"], tmp_path / "run")
        launcher = make_launcher(ctx)
        assert isinstance(launcher, ShimLauncher) and launcher.settings["model"] == MODEL
        launcher.start(timeout=120)
        assert str(llama_cpu[0]) in launcher.command() and f"--port {port}" in launcher.command()
        assert str(llama_cpu[1]) in launcher.command()  # the model, resolved under the library by the shim
        body = {"model": ctx.model, "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 8}
        reply = http.request("POST", ctx.api_url + "/chat/completions", Bounds.of(120), body)
        assert reply.status == 200 and reply.json()["choices"][0]["message"]
        assert launcher.version().lower().startswith("version")
        assert launcher.memory_mb() > 50  # the model is loaded: read by the shim from /proc
        assert launcher.pid is None  # not a pid of this machine's to read
        launcher.stop()
        assert not port_open("127.0.0.1", port)
        log = ctx.log.read_text()
        assert "llama_kv_cache" in log or "KV" in log  # the engine's own load lines, brought here
        assert launcher.stopped_note().endswith(f"port {port} is free")
    finally:
        shim.stop()
    assert not port_open("127.0.0.1", port)


def test_a_plan_through_the_shim_writes_the_host_launchers_records(tmp_path, llama_cpu):
    import subprocess
    import sys

    shim_port, port = free_port(), free_port()
    steps = [
        {"verify-allocation": {"model": str(MODELS / MODEL)}},
        {
            "sweep": {
                "label": "shim-llama",
                "concurrency": "1",
                "requests": 2,
                "max_tokens": 8,
                "min_rounds": 0,
            }
        },
    ]
    plan_path = _plan(tmp_path, shim_port, port, steps)
    shim = start_shim(write_allow(tmp_path, plan_path, MODELS), tmp_path / "state", MODELS, port=shim_port)
    run_dir = tmp_path / "run"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "track", str(plan_path), "--run-dir", str(run_dir)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        shim.stop()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    entry = manifest["engines"]["llama"]
    assert entry["engine"] == "llama-server-cpu-shim" and entry["command"].startswith(
        f"(shim http://127.0.0.1:{shim_port})"
    )
    assert entry["version"].lower().startswith("version") and entry["memory_mb"] > 50
    assert entry["running"] is False and entry["port"] == port
    assert {s["id"]: s["status"] for s in manifest["steps"]}["llama/verify-allocation"] == "passed"
    levels = [json.loads(x) for x in (run_dir / "labbook.md").read_text().splitlines() if x.startswith("{")]
    assert any(r.get("label") == "shim-llama" and r.get("kind", r.get("record")) for r in levels)
    assert not port_open("127.0.0.1", port)
