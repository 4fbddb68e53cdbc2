"""The fault matrix, round two's third sweep (issue 28): the cases a third hostile sweep found."""

from __future__ import annotations

import pytest

from harness.io.notebook import read_records
from tests.integration.faults.hostile import MODEL, HostileServer
from tests.integration.faults.test_faults import SLACK, TOTAL, _run


def _sweep(srv, book, *extra: str):
    args = ["sweep", "--base-url", srv.base_url, "--model", MODEL, "--concurrency", "1", "--requests", "2"]
    args += ["--timeout", str(TOTAL), "--warmup", "0", "--labbook", str(book), "--metrics-url", "none"]
    return _run([*args, "--no-endpoint-check", *extra], 2 * TOTAL + SLACK)


@pytest.mark.slow
def test_a_sweep_level_of_flooded_streams_is_flagged_not_silent(tmp_path):
    """1,500 deltas in about 10 ms (a rate far past any engine's decode for one stream) was flagged
    by measure but became a sweep level's TPOT and throughput silently. The level record now says
    so in decode_note, and the sweep prints it as a warning."""
    book = tmp_path / "b.md"
    with HostileServer("burst-flood") as srv:
        proc, _ = _sweep(srv, book)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    (level,) = read_records(book, "level").records
    assert level["completed"] == 2 and level["output_tokens"] == 3000
    assert level["decode_note"].startswith("implausible: 2 of 2 completed streams"), level
    assert "warning: implausible: 2 of 2 completed streams" in proc.stdout, proc.stdout[-3000:]
