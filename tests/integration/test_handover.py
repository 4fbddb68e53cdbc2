"""The hand-over between engines against a real server (engines lab: stop the previous engine,
confirm memory has been released): the practice server started by the host launcher, stopped, and
its memory judged; then the same server with a process of its tree that outlives the stop (its own
session, so the launcher's signal to the group misses it), named with the lab's remedy. vLLM's
CPU build's hand-over is asserted on the runs tests/e2e/test_track_cpu_vllm.py makes already."""

from __future__ import annotations

import os
import shlex
import signal
import sys
import time

import psutil
import pytest

from harness.engines.handover_watch import HandOver, release_line, stop_and_judge
from harness.engines.launchers.host import HostLauncher
from tests.conftest import ROOT, free_port

pytestmark = pytest.mark.slow

PRACTICE = [sys.executable, "-m", "harness.cli", "practice", "--profile", "kit"]


def wait_for_the_sleeper_to_leave_the_session(deadline_s: float = 120) -> None:
    """Until the orphan below (``os.setsid(); time.sleep(300)``) leads a session of its own: it
    needs a Python start first, which a loaded machine makes slow (a deadline for a hang)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for proc in psutil.process_iter(["pid", "cmdline"]):
            if "os.setsid(); time.sleep(300)" in " ".join(proc.info["cmdline"] or []):
                try:
                    if os.getsid(proc.info["pid"]) == proc.info["pid"]:
                        return
                except OSError:
                    continue
        time.sleep(0.05)
    raise AssertionError("the orphan never called setsid")


def launcher(tmp_path, argv: list[str], port: int) -> HostLauncher:
    return HostLauncher(
        argv=argv,
        host="127.0.0.1",
        port=port,
        health_url=f"http://127.0.0.1:{port}/health",
        log_path=tmp_path / "engine.log",
        env={"PYTHONPATH": str(ROOT)},
    )


def test_the_practice_server_gives_its_memory_back(tmp_path):
    port = free_port()
    engine = launcher(tmp_path, [*PRACTICE, "--port", str(port)], port)
    found = HandOver.started("host", engine, port)
    assert found is not None and "mem_available_mb" in found.before
    engine.start(60)
    held = engine.memory_mb()
    assert held and held > 10  # a Python server's resident set
    result = stop_and_judge(found, engine, held)
    own = result["readings"][0]
    assert (own["source"], own["alive"], own["released"]) == ("engine", 0, True)
    assert own["left"] == "no process of it alive" and own["left_mb"] == 0.0
    assert any(r["source"] == "mem_available_mb" for r in result["readings"])
    # MemAvailable is the whole machine's (other programs move it): its verdict is stated either way
    assert result["released"] is (all(r["released"] for r in result["readings"]))
    assert release_line(result).startswith(
        "    memory released (" if result["released"] else "    WARN  memory not"
    )


def test_a_process_that_outlives_the_stop_is_named_with_the_remedy(tmp_path):
    port = free_port()
    orphan = f"{shlex.quote(sys.executable)} -c 'import os, time; os.setsid(); time.sleep(300)'"
    serve = shlex.join([*PRACTICE, "--port", str(port)])
    engine = launcher(tmp_path, ["sh", "-c", f"{orphan} & exec {serve}"], port)
    found = HandOver.started("host", engine, port)
    engine.start(60)
    survivors = []
    try:
        wait_for_the_sleeper_to_leave_the_session()
        result = stop_and_judge(found, engine, engine.memory_mb())
        survivors = [p for p in found.pids if psutil.pid_exists(p) and p != engine.pid]
        assert len(survivors) == 1, found.pids
        assert result["released"] is False
        own = result["readings"][0]
        assert (own["released"], own["alive"]) == (False, 1)
        pid = survivors[0]
        assert f"pid {pid} still alive" in result["warning"] and f"kill {pid}" in result["warning"]
        assert "stop what is left of it before the next engine starts" in result["warning"]
        assert release_line(result).startswith("    WARN  memory not released after the stop: ")
    finally:
        for pid in survivors:  # the sleeper this test started
            os.kill(pid, signal.SIGKILL)


@pytest.mark.llama
def test_the_cpu_llama_server_gives_its_memory_back(tmp_path):
    """The real CPU llama-server with Gemma 3 270M: its model and cache (hundreds of MB resident)
    come back at the stop; MemAvailable's row is stated beside the engine's own."""
    from harness.engines import llama_cpu

    port = free_port()
    engine = llama_cpu.launcher(port, tmp_path / "llama.log", slots=2, ctx_per_slot=1024, threads=1)
    found = HandOver.started("host", engine, port)
    engine.start(timeout=120)
    held = engine.memory_mb()
    assert held and held > 100, held  # weights and KV cache resident
    result = stop_and_judge(found, engine, held)
    own = result["readings"][0]
    assert (own["source"], own["alive"], own["released"], own["left_mb"]) == ("engine", 0, True, 0.0)
    assert result["held_mb"] == round(held, 1) and result["tolerance_mb"] == max(512.0, held / 10)
    mem = next(r for r in result["readings"] if r["source"] == "mem_available_mb")
    assert mem["tolerance_mb"] == max(1024.0, held / 10) and mem["released"] is (
        mem["left_mb"] <= mem["tolerance_mb"]
    )
