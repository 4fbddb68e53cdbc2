"""The server benchmark script run for one short real row (it starts practice servers itself).

No lateness is asserted here (those numbers belong to the script's printed table); the row only
checks that the ruler's schedule, 100 tokens/s per stream, was served and counted.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_one_short_row_prints_a_table_and_the_machine():
    proc = subprocess.run(
        [
            sys.executable,
            "scripts/bench_server.py",
            "--seconds",
            "2.5",
            "--stagger",
            "0.5",
            "--streams",
            "4",
            "--profiles",
            "ruler",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    table = [line for line in proc.stdout.splitlines() if line.startswith("| ruler")]
    assert len(table) == 1
    cells = [c.strip() for c in table[0].strip("|").split("|")]
    assert cells[1] == "4" and int(cells[2]) > 0  # four streams, requests finished
    assert 300 <= int(cells[3]) <= 420  # 4 streams x 100 tokens/s, as the ruler profile schedules
    assert "machine: " in proc.stdout and "target" not in proc.stdout.split("machine: ")[1]
