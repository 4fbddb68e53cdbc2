"""Workers and masters under hard faults, against the practice server on 127.0.0.1: a local
worker SIGKILLed or frozen with SIGSTOP in the second level, and a master SIGKILLed while a
worker of its own (``harness worker``) runs. Each loss is named in one line with the requests it
had in flight counted as lost; the first level's record is kept; a frozen worker is ended with
the sweep; a worker whose master is gone ends by itself, saying so, well within a minute.

The levels: ``--concurrency 8,2`` of 160 requests of 8 tokens at 5 ms a token, so the first level
takes about a second and the second about four, and each fault lands in the second."""

from __future__ import annotations

import contextlib
import queue
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from harness.records.notebook import read_records
from harness.engines.ports import free_port
from harness.load.worker import MASTER_GONE_S
from tests.conftest import ROOT, kit_profile
from tests.integration.deadlines import START_S

pytestmark = pytest.mark.slow

HARNESS = [sys.executable, "-m", "harness"]
REQUESTS = 160


def _server(practice):
    return practice(
        kit_profile(
            name="workers",
            seats=8,
            output={"length": {"kind": "fixed", "tokens": 8}},
            timing={"step_base_s": 0.005, "step_per_seq_s": 0.0, "prefill_tokens_per_s": 1e6},
        )
    )


def _sweep(url: str, book, *extra: str) -> list[str]:
    return [
        *HARNESS, "sweep", "--base-url", url, "--model", "local-chat", "--concurrency", "8,2",
        "--requests", str(REQUESTS), "--max-tokens", "8", "--label", "workers", "--labbook", str(book),
        "--warmup", "0", "--metrics-url", "none", *extra,
    ]  # fmt: skip


class Run:
    """A process whose stdout lines are read as they come."""

    def __init__(self, argv: list[str], err) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT)
        self.lines: queue.Queue = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=lambda: [self.lines.put(x) for x in self.proc.stdout], daemon=True).start()

    def wait_for(self, words: str, timeout: float = START_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty):
                self.seen.append(self.lines.get(timeout=0.2))
                if words in self.seen[-1]:
                    return
            assert self.proc.poll() is None or not self.lines.empty(), "".join(self.seen)
        pytest.fail(f"{words!r} never came: " + "".join(self.seen))

    def rest(self) -> str:
        with contextlib.suppress(queue.Empty):
            while True:
                self.seen.append(self.lines.get(timeout=1))
        return "".join(self.seen)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def _workers(pid: int) -> list[psutil.Process]:
    return [c for c in psutil.Process(pid).children() if "--worker" in " ".join(c.cmdline())]


def _gone(procs: list[psutil.Process], timeout: float) -> bool:
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    return not alive


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGSTOP], ids=["SIGKILL", "SIGSTOP"])
def test_a_worker_lost_in_the_second_level_is_named_and_the_first_is_kept(practice, tmp_path, how):
    server = _server(practice)
    book = tmp_path / "book.md"
    err = open(tmp_path / "sweep.err", "w+")  # noqa: SIM115 (read after the run)
    run = Run(_sweep(server.base_url, book, "--processes", "2"), err)
    try:
        run.wait_for("... c=2:")  # the second level's first progress line
        workers = _workers(run.proc.pid)
        assert len(workers) == 2
        workers[0].send_signal(how)
        # a hang only: a killed worker is seen at once, a frozen one within Locust's heartbeat
        # liveness (3 s); then the other worker's requests in flight, and the frozen one's end
        run.proc.wait(timeout=START_S)
    finally:
        run.kill()
    out = run.rest()
    err.seek(0)
    said = err.read()
    assert run.proc.returncode == 2, out + said
    assert "Traceback" not in out + said
    lost_lines = [x for x in said.splitlines() if x.startswith("harness sweep: a Locust worker was lost")]
    assert len(lost_lines) == 1, said
    why = "exited with status -9" if how == signal.SIGKILL else "sent no heartbeat"
    assert why in lost_lines[0] and "never came back" in lost_lines[0], lost_lines[0]
    first, second = read_records(book, "level").records  # each validated against its schema
    assert first["concurrency"] == 8 and first["completed"] == REQUESTS and "workers" in first
    assert not any(w.get("lost") for w in first["workers"])
    assert second["concurrency"] == 2 and second["requests"] == REQUESTS
    (lost,) = [w for w in second["workers"] if w.get("lost")]
    assert why in lost["lost"] and lost["requests"] > lost["returned"]
    assert second["first_error"].startswith(f"WorkerLost: worker {lost['worker']}")
    assert second["completed"] + second["failed"] + second.get("cancelled", 0) >= REQUESTS - 1
    assert _gone(workers, 15)  # the frozen one too: ended with the sweep, no orphan


def test_a_worker_frozen_between_levels_ends_the_sweep_in_one_line(practice, tmp_path):
    """Frozen as the first level's line is printed: the second level either had not begun (the
    master waited 60 s for users that never came, then the level's bound: hours) or just had."""
    server = _server(practice)
    book = tmp_path / "book.md"
    err = open(tmp_path / "sweep.err", "w+")  # noqa: SIM115
    run = Run(_sweep(server.base_url, book, "--processes", "2"), err)
    try:
        run.wait_for("c=  8  ok")
        workers = _workers(run.proc.pid)
        (frozen,) = [w for w in workers if w.environ().get("HARNESS_WORKER_NAME") == "process-2"]
        frozen.send_signal(signal.SIGSTOP)
        run.proc.wait(timeout=START_S)  # a hang only: the heartbeat liveness, then the other's stop
    finally:
        run.kill()
    out = run.rest()
    err.seek(0)
    said = err.read()
    assert run.proc.returncode == 2 and "Traceback" not in out + said, out + said
    lost_lines = [x for x in said.splitlines() if x.startswith("harness sweep: a Locust worker was lost")]
    assert len(lost_lines) == 1 and "process-2" in lost_lines[0], said
    records = read_records(book, "level").records
    assert records[0]["concurrency"] == 8 and records[0]["completed"] == REQUESTS and len(records) <= 2
    assert _gone(workers, 15)


def test_a_master_killed_leaves_no_worker_behind(practice, tmp_path):
    server = _server(practice)
    book, port = tmp_path / "book.md", free_port()
    err = open(tmp_path / "sweep.err", "w+")  # noqa: SIM115
    master = Run(
        _sweep(server.base_url, book, "--expect-workers", "1", "--master-host", "127.0.0.1",
               "--master-port", str(port), "--worker-wait", str(START_S)),
        err,
    )  # fmt: skip
    worker_err = open(tmp_path / "worker.err", "w+")  # noqa: SIM115
    worker = subprocess.Popen(
        [*HARNESS, "worker", "--master-host", "127.0.0.1", "--master-port", str(port), "--name", "w1"],
        stdout=subprocess.DEVNULL,
        stderr=worker_err,
        cwd=ROOT,
    )
    try:
        master.wait_for("... c=2:")
        master.proc.send_signal(signal.SIGKILL)
        master.proc.wait(10)
        t0 = time.monotonic()
        worker.wait(timeout=MASTER_GONE_S + 30)  # by itself, well within the minute
        took = time.monotonic() - t0
    finally:
        master.kill()
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
    worker_err.seek(0)
    words = worker_err.read()
    assert MASTER_GONE_S - 1 < took < MASTER_GONE_S + 15, (took, words)
    said = [
        x
        for x in words.splitlines()
        if x.startswith("harness worker w1: no heartbeat from the sweep's master")
    ]
    assert (
        len(said) == 1 and f"127.0.0.1:{port}" in said[0] and "request(s) it had in flight lost" in said[0]
    ), words
    assert "Traceback" not in words
    (first,) = read_records(book, "level").records  # the level before the kill is kept whole
    assert first["concurrency"] == 8 and first["completed"] == REQUESTS


def test_a_master_killed_takes_its_local_workers_at_once(practice, tmp_path):
    server = _server(practice)
    err = open(tmp_path / "sweep.err", "w+")  # noqa: SIM115
    run = Run(_sweep(server.base_url, tmp_path / "book.md", "--processes", "2"), err)
    try:
        run.wait_for("... c=2:")
        workers = _workers(run.proc.pid)
        run.proc.send_signal(signal.SIGKILL)
        assert _gone(workers, 5)  # the kernel's parent-death signal, not a heartbeat's wait
    finally:
        run.kill()
