"""The readers that pass a child's output on live (a step's harness command in run/child.py, a
download tool in engines/models/fetch.py) and the engine log's last line (launchers/base.py) take a bare
carriage return, as progress bars write it, for a line end: no line is lost or glued to the next,
a CR LF pair split over two writes is one line end, and the last unterminated line is kept."""

from __future__ import annotations

import sys

from harness.engines.models.fetch import run_tool
from harness.run import child
from harness.engines.launchers.base import last_log_line

# A progress bar (CR after each update, a pause after the last so the CR arrives alone), a CR LF pair
# split over two writes, plain lines, and a last line with no end at all.
CHILD = r"""
import sys, time
w = sys.stdout.write
for pct in (10, 50, 100):
    w(f"loading {pct}%\r"); sys.stdout.flush(); time.sleep(0.05)
time.sleep(0.3)
w("done\r"); sys.stdout.flush(); time.sleep(0.2); w("\nnext line\n")
w("a\r\nb\n"); w("no end")
"""
LINES = ["loading 10%", "loading 50%", "loading 100%", "done", "next line", "a", "b", "no end"]


def test_a_steps_output_splits_at_bare_carriage_returns(tmp_path, monkeypatch):
    monkeypatch.setattr(child, "harness_argv", lambda args: [sys.executable, "-c", CHILD])
    seen: list[str] = []
    status = child.run_harness(["whatever"], tmp_path / "step.log", {}, seen.append)
    assert status == 0
    assert seen == ["    " + x for x in LINES]
    logged = (tmp_path / "step.log").read_text().splitlines()
    assert logged == ["$ harness whatever", *LINES]


def test_a_download_tools_output_splits_at_bare_carriage_returns():
    seen: list[str] = []
    status, out = run_tool([sys.executable, "-c", CHILD], seen.append)
    assert status == 0
    assert seen[1:] == ["      " + x for x in LINES]  # after the "$ command" line
    assert out.splitlines() == LINES


def test_the_engine_logs_last_line_is_the_last_progress_update(tmp_path):
    log = tmp_path / "engine.log"
    log.write_bytes(b"server starting\nloading 10%\rloading 100%\r")
    assert last_log_line(log) == "loading 100%"
    log.write_bytes(b"loading 10%\rloading 100%\rmain: server is listening\r\n")
    assert last_log_line(log) == "main: server is listening"
