"""A request's total bound that grows with the crowd (``--timeout-per-user``), and the bounds of the
sweep's Locust worker processes (``--processes``), against small servers of our own."""

from __future__ import annotations

import pytest

from harness.records.notebook import read_records
from tests.integration.faults.hostile import MODEL, HostileServer
from tests.integration.faults.test_faults import _run

# One seat, 0.6 s a request: at c = 4 the last request waits about 1.8 s for the seat, 2.4 s in all.
SEATS, SERVICE_S, USERS = 1, 0.6, 4


def _sweep(srv, book, *extra: str) -> list[str]:
    args = ["sweep", "--base-url", srv.base_url, "--model", MODEL, "--concurrency", str(USERS)]
    args += ["--requests", str(USERS), "--warmup", "0", "--labbook", str(book), "--metrics-url", "none"]
    return args + ["--no-endpoint-check", *extra]


@pytest.mark.slow
def test_a_fixed_bound_drops_queued_requests_and_a_crowd_bound_keeps_them(tmp_path):
    with HostileServer("ok", delay_s=SERVICE_S, seats=SEATS) as srv:
        fixed = _run(_sweep(srv, tmp_path / "fixed.md", "--timeout", "1.5"), 20)
        crowd = _run(_sweep(srv, tmp_path / "crowd.md", "--timeout", "1.5", "--timeout-per-user", "2"), 20)
    (dropped,) = read_records(tmp_path / "fixed.md", "level").records
    assert dropped["failed"] >= 1, dropped  # still waiting for the seat when 1.5 s passed
    assert dropped["first_error"] == "Timeout: the request passed its total bound of 1.5 s"
    assert "Traceback" not in fixed.stderr  # exit 0: some requests of the level finished

    (kept,) = read_records(tmp_path / "crowd.md", "level").records
    assert kept["completed"] == USERS and kept["failed"] == 0, kept  # bound max(1.5, 4 x 2) = 8 s
    assert crowd.returncode == 0, crowd.stderr
    assert "each request's bound at c users: the larger of 1.5 s and c x 2 s" in crowd.stdout


@pytest.mark.slow
def test_the_worker_processes_run_under_the_sweeps_bounds(tmp_path):
    # Before, the workers' users kept Locust's 300 s default: a trickling server held every
    # request until the level's bound cancelled it, 34 s later, instead of 3 s.
    book = tmp_path / "book.md"
    with HostileServer("trickle") as srv:
        args = [
            "sweep",
            "--base-url",
            srv.base_url,
            "--model",
            MODEL,
            "--concurrency",
            "2",
            "--requests",
            "2",
        ]
        args += ["--processes", "1", "--timeout", "3", "--warmup", "0", "--labbook", str(book)]
        args += ["--metrics-url", "none", "--no-endpoint-check"]
        proc = _run(args, 3 + 30)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    (level,) = read_records(book, "level").records
    assert level["failed"] == 2 and level["cancelled"] == 0, level
    # Each request ended at its 3 s bound, not the level's (cancelled 0, the total bound named):
    # what the old 34 s was. Not timed: the workers' start on a loaded machine is most of it.
    assert level["first_error"] == "Timeout: the request passed its total bound of 3 s", level
