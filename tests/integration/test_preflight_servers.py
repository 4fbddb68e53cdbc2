"""Preflight checks that need a real listener or the CLI in its own process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.run import preflight_checks
from tests.conftest import ROOT


def test_port_held_by_a_test_server_names_it(practice):
    server = practice("kit")
    f = preflight_checks.port_free("127.0.0.1", server.port)
    assert f.level == "FAIL"
    assert f.text.startswith(f"{server.port} is in use by ") and f.text.endswith(
        "; stop it first (one server at a time)"
    )


def test_gpu_track_preflight_reports_honestly_what_this_machine_lacks():
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "preflight", "s"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 1
    assert "FAIL  model" in done.stdout and "Qwen3-8B-Q4_K_M.gguf not found" in done.stdout
    assert Path("/usr/bin/nvidia-smi").exists() or "FAIL  gpu" in done.stdout
