"""`--processes N` takes SIGINT and SIGTERM like one process: the level in progress stops, every
finished level stays on disk, one line, exit 130, the worker processes gone."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.io.notebook import read_records
from tests.integration.faults.hostile import MODEL, HostileServer

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_processes_stop_on_a_signal_keeping_finished_levels(sig, tmp_path):
    book = tmp_path / "book.md"
    with HostileServer("ok", delay_s=0.3) as srv:
        cmd = [sys.executable, "-m", "harness.entry", "sweep", "--base-url", srv.base_url, "--model", MODEL]
        cmd += ["--concurrency", "2,2,2,2,2,2", "--requests", "6", "--timeout", "5", "--warmup", "0"]
        cmd += ["--processes", "2", "--labbook", str(book), "--metrics-url", "none", "--no-endpoint-check"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and not (book.exists() and '"concurrency"' in book.read_text()):
                time.sleep(0.1)
            assert book.exists(), "no level finished"
            proc.send_signal(sig)
            t0 = time.monotonic()
            out, err = proc.communicate(timeout=30)
            took = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "interrupted" in err, err
    assert took < 20
    levels = read_records(book, "level").records
    assert 1 <= len(levels) < 6 and all(r["requests"] == 6 for r in levels)
