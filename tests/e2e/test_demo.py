"""`harness demo` end to end: it starts its own practice server, sweeps the crowds and prints the table."""

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_demo_prints_the_crowd_table(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "demo",
            "--crowds",
            "1,8,16",
            "--rounds",
            "1",
            "--max-tokens",
            "24",
            "--log-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "| crowd |" in out.stdout.replace("   ", " ").replace("  ", " ") or "crowd" in out.stdout
    assert "One copy holds 8 people within the promise" in out.stdout
