"""Lemonade through the service launcher. A fake `lemond` (the practice server,
standing in for Lemonade's API) runs as the service on a free port; a fake `lemonade` CLI answers
the serve script's steps. A Lemonade plan then runs measure and probe through the launcher: the
measure step gets the pid of the process listening on the port (never a placeholder), the serve
script's status, backend install, backend list and unload run before the load, and when the
service is down the start fails with the lab's lemond remedy. The /api/v1 fallback is tested
against a real local server that answers only there."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from harness.records.notebook import read_records
from harness.engines.ports import wait_port_free
from harness.engines.launchers.base import wait_healthy
from harness.engines.launchers.service import ServiceLauncher
from harness.run.plans import load_plan
from harness.run.runner import Runner
from tests.conftest import free_port, install_fake

MODEL = "user.Qwen3-8B-Q4_K_M"

FAKE_LEMOND = """#!{python}
# Stands in for Lemonade Server (the lemond service): the practice server under the model name
# Lemonade registers, on LEMONADE_PORT, in the foreground as a service runs.
import os, sys, yaml
profile = yaml.safe_load(open(os.path.join({root!r}, "harness/practice/profiles/kit.yaml")))
profile.update(name="lemonade")
profile["model"].update(id="user.Qwen3-8B-Q4_K_M", aliases=[])
path = os.path.join(os.environ["TMPDIR_FOR_FAKE"], "lemond-profile.yaml")
yaml.safe_dump(profile, open(path, "w"))
os.execv(sys.executable, [sys.executable, "-m", "harness.cli", "practice", "--profile", path,
                          "--host", "127.0.0.1", "--port", os.environ["LEMONADE_PORT"]])
"""

FAKE_LEMONADE = """#!{python}
# Stands in for the Lemonade CLI: every call is appended to calls.log; status fails when nothing
# answers on LEMONADE_PORT (the service is down), as the real CLI cannot reach the server.
import os, socket, sys
tmp = os.environ["TMPDIR_FOR_FAKE"]
open(os.path.join(tmp, "calls.log"), "a").write(" ".join(sys.argv[1:]) + "\\n")
args = sys.argv[1:]
if args == ["--version"]:
    print("10.2.0-fake")
elif args == ["status"]:
    try:
        socket.create_connection(("127.0.0.1", int(os.environ["LEMONADE_PORT"])), 1).close()
        print("Server is running on port " + os.environ["LEMONADE_PORT"])
    except OSError:
        print("Error: could not connect to Lemonade Server at 127.0.0.1:" + os.environ["LEMONADE_PORT"])
        sys.exit(1)
elif args[:2] == ["backends", "install"]:
    print("installed " + args[2])
elif args == ["backends"]:
    print("llamacpp:rocm  b7000-fake  installed")
elif args == ["unload"]:  # with nothing loaded it fails, which the serve script ignores (|| true)
    if not os.path.exists(os.path.join(tmp, "first-unload")):
        open(os.path.join(tmp, "first-unload"), "w").close()
    if not os.path.exists(os.path.join(tmp, "loaded")):
        print("Error: no model is loaded")
        sys.exit(1)
    os.remove(os.path.join(tmp, "loaded"))
elif args[:1] == ["load"]:
    assert args[1:] == ["user.Qwen3-8B-Q4_K_M", "--ctx-size", "8192", "--llamacpp", "rocm",
                        "--llamacpp-args", "--flash-attn on --cache-ram 0"], args
    open(os.path.join(tmp, "loaded"), "w").close()
    print("loaded " + args[1])
"""


def lemonade_plan(tmp_path: Path, port: int, steps: list) -> Path:
    spec = {
        "schema_version": 1,
        "name": "lemonade",
        "title": "Lemonade through its service",
        "variables": {"HOST_DESC": "test"},
        "stages": [
            {
                "id": "lemonade-rocm",
                "engine": "lemonade",
                "settings": {"model": MODEL, "backend": "rocm", "port": port},
                "record": {"engine": "lemonade-rocm", "quant": "Q4_K_M", "context_length": 8192},
                "steps": steps,
            }
        ],
    }
    path = tmp_path / "lemonade.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.fixture
def lemond(tmp_path, monkeypatch):
    """The fake CLIs on PATH and the fake service started on a free port; stopped afterwards."""
    install_fake(tmp_path, monkeypatch, "lemonade", FAKE_LEMONADE)
    install_fake(tmp_path, monkeypatch, "lemond", FAKE_LEMOND)
    port = free_port()
    monkeypatch.setenv("LEMONADE_PORT", str(port))
    procs = []

    def start() -> subprocess.Popen:
        proc = subprocess.Popen(
            [str(tmp_path / "bin" / "lemond")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        procs.append(proc)
        wait_healthy(f"http://127.0.0.1:{port}/v1/health", 60)
        return proc

    yield port, start
    for proc in procs:
        proc.terminate()
        proc.wait(15)
    assert wait_port_free("127.0.0.1", port, 10)


def run(tmp_path: Path, path: Path) -> tuple[int, dict, list[str]]:
    lines: list[str] = []
    code = Runner(load_plan(str(path)), tmp_path / "run", out=lines.append).execute(resume=False)
    return code, json.loads((tmp_path / "run" / "manifest.json").read_text()), lines


@pytest.mark.slow
def test_measure_and_probe_run_through_the_service_launcher(tmp_path, lemond):
    port, start = lemond
    service = start()
    steps = [{"measure": {"max_tokens": 16, "repetitions": 1}}, "probe"]
    code, manifest, lines = run(tmp_path, lemonade_plan(tmp_path, port, steps))
    by_id = {s["id"]: s for s in manifest["steps"]}
    assert code == 0, [(s["id"], s["status"], s["reason"]) for s in manifest["steps"]]
    calls = (tmp_path / "calls.log").read_text().splitlines()
    order = [
        c.split()[0] + (" " + c.split()[1] if c.startswith("backends") and " " in c else "") for c in calls
    ]
    assert order[:5] == ["status", "backends install", "backends", "unload", "load"], calls
    assert calls[1] == "backends install llamacpp:rocm" and order[-1] == "unload"
    idle = tmp_path / "run" / "engines" / "lemonade-rocm.idle.json"
    assert idle.stat().st_mtime >= (tmp_path / "first-unload").stat().st_mtime  # snapshot after the unload
    engine = manifest["engines"]["lemonade-rocm"]
    assert engine["service_pid"] == service.pid and engine["pid"] is None  # cleanup never stops it
    assert [b["status"] for b in engine["before_start"]] == [0, 0, 0, 1]  # nothing to unload: not checked
    assert not (tmp_path / "loaded").exists()  # unloaded at the stop
    assert engine["memory_mb"] > 10 and "memory_note" not in engine
    measure = by_id["lemonade-rocm/measure"]["command"]
    assert f"--server-pid {service.pid}" in measure and "<" not in measure
    short, long = read_records(tmp_path / "run" / "labbook.md", "engine-speed").records
    assert short["engine"] == "lemonade-rocm" and short["process_resident_mb"] > 10
    (features,) = read_records(tmp_path / "run" / "labbook.md", "features").records
    assert features["models_endpoint"]["model_ids"] == [MODEL]
    log = (tmp_path / "run" / "engines" / "lemonade-rocm.out").read_text()
    assert "$ lemonade backends\nllamacpp:rocm  b7000-fake  installed" in log  # the versions, kept
    assert service.poll() is None  # the service keeps running: not ours to stop


def test_a_service_that_is_not_running_fails_with_the_lemond_remedy(tmp_path, lemond):
    port, _ = lemond  # not started
    code, manifest, lines = run(tmp_path, lemonade_plan(tmp_path, port, ["probe"]))
    start = next(s for s in manifest["steps"] if s["id"] == "lemonade-rocm/start")
    assert code == 1 and start["status"] == "failed"
    assert start["reason"].startswith("lemonade status exited with status 1")
    assert "systemctl start lemond" in start["reason"]
    assert start["result"]["diagnosis"]["id"] == "lemond-not-running"
    (why,) = [x for x in lines if x.startswith("    WHY   ")]
    assert "could not connect to Lemonade Server" in why
    assert (tmp_path / "calls.log").read_text().splitlines() == ["status"]  # nothing else tried


class OldLemonade(BaseHTTPRequestHandler):
    """A Lemonade before v10.1: the API under /api/v1 only, 404 elsewhere."""

    def do_GET(self):  # noqa: N802 (the standard library's name)
        ok = self.path == "/api/v1/health"
        body = json.dumps({"status": "ok", "model_loaded": MODEL} if ok else {"detail": "Not Found"}).encode()
        self.send_response(200 if ok else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_the_api_v1_fallback_is_taken_when_v1_answers_404(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), OldLemonade)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        ok = [sys.executable, "-c", "pass"]
        launcher = ServiceLauncher(
            argv=ok,
            stop_argv=ok,
            host="127.0.0.1",
            port=port,
            health_url=f"http://127.0.0.1:{port}/v1/health",
            log_path=tmp_path / "lemonade.out",
            fallback_path="/api/v1",
        )
        launcher.start(timeout=10)
        assert launcher.api_base == f"http://127.0.0.1:{port}/api/v1"
        assert launcher.pid is not None and launcher.memory_mb() > 1  # this test's own process listens
        plain = ServiceLauncher(
            ok, ok, "127.0.0.1", port, f"http://127.0.0.1:{port}/v1/health", tmp_path / "x.out"
        )
        with pytest.raises(Exception, match="was not healthy after 1 s"):
            plain.start(timeout=1)  # no fallback configured: a 404 is not healthy
    finally:
        server.shutdown()


def test_the_preflight_asks_lemonade_status_and_names_lemond_when_it_is_down(tmp_path, lemond):
    from harness.run.preflight import plan_findings, plan_targets

    port, start = lemond
    plan = load_plan(str(lemonade_plan(tmp_path, port, ["probe"])))

    def service_findings():
        found = plan_findings(
            plan, plan_targets(plan, tmp_path / "run"), tmp_path / "run", run=lambda *a, **k: None
        )
        return [f for f in found if f.check == "service"]

    (down,) = service_findings()
    assert down.level == "FAIL" and down.text.startswith("lemonade status exited with status 1")
    assert "systemctl start lemond" in down.text
    start()
    (up,) = service_findings()
    assert up.level == "PASS" and f"Server is running on port {port}" in up.text


def test_a_rehearsal_runs_the_serve_scripts_steps_against_the_imitated_service(tmp_path, monkeypatch):
    """Track X's rehearsal stand-in for Lemonade (harness/data/rehearsals/track-x.yaml): the service
    launcher, as on the hardware, with its stand-in service (harness imitate lemond) started for the
    block, every CLI call of the serve script made by the imitated CLI, and the stand-in stopped at
    the end, its port free. No `lemonade` on PATH: nothing real is asked."""
    from harness.run.rehearsal import read_overlay

    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no lemonade, no lemond
    overlay, _, _ = read_overlay("track-x")
    port = free_port()
    plan = load_plan(str(lemonade_plan(tmp_path, port, [{"measure": {"max_tokens": 16, "repetitions": 1}}])))
    (block,) = plan.blocks.values()
    block.stand_in = overlay["engines"]["lemonade"]
    lines: list[str] = []
    code = Runner(plan, tmp_path / "run", out=lines.append).execute(resume=False)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert code == 0, [(s["id"], s["status"], s.get("reason")) for s in manifest["steps"]]
    engine = manifest["engines"]["lemonade-rocm"]
    assert [b["command"].split(" imitate ", 1)[1] for b in engine["before_start"]] == [
        "lemonade status",
        "lemonade backends install llamacpp:rocm",
        "lemonade backends",
        "lemonade unload",
    ]
    assert [b["status"] for b in engine["before_start"]] == [0, 0, 0, 0]
    log = (tmp_path / "run" / "engines" / "lemonade-rocm.out").read_text()
    assert "loaded user.Qwen3-8B-Q4_K_M (practice imitation of the Lemonade CLI)" in log
    service_log = (tmp_path / "run" / "engines" / "lemonade-rocm.service.out").read_text()
    assert service_log.startswith("practice server imitating lemonade (not the real engine): lemond ")
    stop = next(s for s in manifest["steps"] if s["id"] == "lemonade-rocm/stop")
    assert "the stand-in service stopped" in stop["reason"] and "is free" in stop["reason"]
    (short, _long) = read_records(tmp_path / "run" / "labbook.md", "engine-speed").records
    assert short["engine"] == "lemonade-rocm" and short["process_resident_mb"] > 10
    assert wait_port_free("127.0.0.1", port, 5)
