"""Reliability round four: SIGKILL anywhere, resumed without a torn line.

`harness sweep`, `harness capacity`, a headless Locust run and `harness track` are killed with
SIGKILL at seeded moments against the practice server on 127.0.0.1: during a level (a kill from
outside at a random time), during a notebook or samples write (the write lands a random share of
its bytes, as the kernel leaves one cut by a kill, then the kill) and during the run report. After
every kill the notebook and the samples file, read with the project's readers, are whole lines
that pass their schemas; the only damage they may name is a torn last line, and the only samples
without a level record are the killed run's. The next append mends a torn line. A killed track
run names the step it was cut in; `--resume` finishes it without repeating a finished step; no
engine, child process or port is left (`harness cleanup` proves it).

The commands are forked from a process that has already imported the harness (forks.py): a
start costs seconds on a loaded machine, and fifty of them would be the whole test.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.engines.ports import wait_port_free
from harness.records.base import is_level
from harness.records.notebook import read_records, read_samples
from harness.run.manifest import cut_of
from tests.conftest import ROOT
from tests.integration.deadlines import START_S

pytestmark = pytest.mark.slow

SEED = 55
KILLS = {"sweep": 18, "capacity": 12, "locust": 14, "track": 6}  # 50 kills in all
TORN = "a torn last line"
NOTEBOOK_KINDS = {  # every record kind these commands write, and how to pick its lines
    "level": is_level,
    "endpoint-check": lambda o: o.get("record") == "endpoint-check",
    "capacity": lambda o: o.get("record") == "capacity",
}


class Forks:
    """The fork server (forks.py): each command forked from a process that imported it all."""

    def __init__(self, gevent: bool):
        argv = [sys.executable, "-m", "tests.integration.faults.forks"] + (["--gevent"] if gevent else [])
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE}
        self.proc = subprocess.Popen(argv, cwd=ROOT, text=True, **pipes)
        assert "ready" in self._answer()

    def _answer(self) -> dict:
        line = self.proc.stdout.readline()
        assert line, "the fork server died"
        return json.loads(line)

    def _ask(self, job: dict) -> dict:
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def run(self, argv: list[str], cwd: Path, out: Path, trip: dict | None = None) -> int:
        return self._ask({"run": argv, "cwd": str(cwd), "out": str(out), "trip": trip})["pid"]

    def wait(self, pid: int, timeout: float = START_S) -> int:
        status = self._ask({"wait": pid, "timeout": timeout})["status"]
        assert status is not None, f"pid {pid} still runs after {timeout} s"
        return status

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from tests.conftest import start_practice

    srv = start_practice(tmp_path_factory.mktemp("practice"), "kit")
    yield srv
    srv.stop()


SEEN: dict[str, int] = {"torn": 0, "cut level": 0}  # proof the kills hit the windows named


def _check_files(book: Path, samples: Path, killed: set[int]) -> list[dict]:
    """Every record-like line of the notebook is a whole record passing its schema (a torn last
    line named, nothing else); every samples line passes the sample schema; a level's samples
    are all there; samples without a record are the killed run's. The level records."""
    if not book.exists():
        return []
    lines = [x for x in book.read_text(encoding="utf-8").splitlines() if x.strip().startswith("{")]
    found, warned = [], []
    for kind, select in NOTEBOOK_KINDS.items():
        got = read_records(book, kind, select=select)
        found += got.records if kind != "level" else []
        warned += got.warnings
    levels = read_records(book, "level", select=is_level).records
    torn = [w for w in warned if TORN in w]
    assert all(TORN in w for w in warned), warned
    last = f"{book}:{len(book.read_text().splitlines())}:"
    assert len(set(torn)) <= 1 and all(w.startswith(last) for w in torn), torn  # the last line only
    assert len(lines) == len(levels) + len(found) + bool(torn), (len(lines), len(levels), len(found), torn)
    if not samples.exists():
        assert not levels
        return levels
    rows = read_samples(samples, levels)
    SEEN["torn"] += bool(torn) or any(TORN in n for n in rows.warnings)
    SEEN["cut level"] += any("no level record" in n for n in rows.warnings)
    for note in rows.warnings:
        cut = "no level record" in note and any(f"-{pid}, repeat" in note for pid in killed)
        assert TORN in note or cut, note  # only the killed runs' samples lack their record
    for rec in levels:
        mine = [r for r in rows.records if _key(r) == _key(rec)]
        assert len(mine) == rec["requests"], (_key(rec), len(mine), rec["requests"])  # both, or neither
    return levels


def _key(obj: dict) -> tuple:
    return (obj.get("run_id"), obj["label"], obj["concurrency"], obj.get("repeat", 1))


def _kill_at(forks: Forks, argv, cwd: Path, out: Path, trip: dict | None, delay: float | None):
    """Run one trial: tripped inside, killed from outside after ``delay``, or whole (neither).
    (pid, status)."""
    pid = forks.run(argv, cwd, out, trip)
    if delay is not None:
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pid, forks.wait(pid)


def _load_trials(forks, rng, argv, workdir: Path, count: int, book: Path) -> int:
    """``count`` trials of one load command on one notebook: first a whole run (its duration sets
    the outside kills' window, its records the writes a trip may cut: one per record, and one
    more for each level's samples), then kills alternating outside and in a write; then a whole
    run again, after which no line is torn. The kills that landed."""
    samples = book.with_suffix(".samples.jsonl")
    t0 = time.monotonic()
    pid, status = _kill_at(forks, argv, workdir, workdir / "clean.out", None, None)
    took = time.monotonic() - t0
    assert status == 0, (workdir / "clean.out").read_text()[-3000:]
    levels = _check_files(book, samples, set())
    writes = sum(x.startswith("{") for x in book.read_text().splitlines()) + len(levels)
    killed, pids = 0, set()
    for i in range(count):
        trip = {"kind": "write", "nth": rng.randint(1, writes), "share": rng.random()} if i % 2 else None
        out = workdir / f"trial-{i}.out"
        delay = None if trip else rng.uniform(0.05, took * 0.9)
        pid, status = _kill_at(forks, argv, workdir, out, trip, delay)
        assert status in (0, -signal.SIGKILL), (i, trip, status, out.read_text()[-3000:])
        killed += status == -signal.SIGKILL
        pids.add(pid)
        _check_files(book, samples, pids)
    pid, status = _kill_at(forks, argv, workdir, workdir / "after.out", None, None)
    assert status == 0, (workdir / "after.out").read_text()[-3000:]
    _check_files(book, samples, pids)
    mended = read_records(book, "level", select=is_level).warnings + read_samples(samples).warnings
    assert not [w for w in mended if TORN in w], mended  # the whole run's appends mended them
    return killed


def _load_args(server, book: Path) -> list[str]:
    return [
        "--base-url", server.base_url, "--model", "practice-model", "--requests", "3",
        "--max-tokens", "8", "--timeout", "10", "--warmup", "0", "--labbook", str(book),
    ]  # fmt: skip


def test_load_commands_killed_anywhere_leave_whole_lines(server, tmp_path):
    rng = random.Random(SEED)
    forks = Forks(gevent=True)
    killed = {}
    try:
        for name in ("sweep", "capacity", "locust"):
            workdir = tmp_path / name
            workdir.mkdir()
            book = workdir / "labbook.md"
            book.write_text("# the SIGKILL test's notebook\n\nProse stays.\n")
            if name == "sweep":
                argv = ["harness", "sweep", *_load_args(server, book), "--concurrency", "1,2,3"]
            elif name == "capacity":
                argv = ["harness", "capacity", *_load_args(server, book)]
                argv += ["--promise", "5", "--max-users", "4", "--time-budget", "20", "--max-runs", "2"]
            else:
                argv = [
                    "locust", "-f", str(ROOT / "locustfiles/llm_user.py"), "--headless", "-u", "2",
                    "-r", "2", "-t", "1s", "--stop-timeout", "10", "--host", server.root,
                    "--max-tokens", "8", "--only-summary", "--labbook", str(book), "--label", "locust",
                ]  # fmt: skip
            killed[name] = _load_trials(forks, rng, argv, workdir, KILLS[name], book)
    finally:
        forks.close()
    assert sum(killed.values()) >= 0.8 * sum(KILLS[n] for n in killed), killed
    assert SEEN["torn"] and SEEN["cut level"], SEEN  # torn lines were met, named and mended


PLAN = """schema_version: 1
name: sigkill
title: "Two tiny sweeps and the report against the practice server (the SIGKILL test)"
machine: null
variables: {ACCELERATOR: cpu, DISK_GB: 1, ALLOW_CPU: true, HOST_DESC: the SIGKILL test, PRACTICE_PORT: free}
sweep: {requests: 2, max_tokens: 8, timeout: 20, warmup: 0}
stages:
  - id: practice
    engine: practice
    title: the practice server
    settings: {profile: kit, port: "${PRACTICE_PORT}"}
    record: {quant: made-up (practice kit), context_length: 4096, server_slots: 8}
    steps:
      - sweep: {label: tiny-a, concurrency: "1,2"}
      - sweep: {label: tiny-b, concurrency: "1"}
  - report
"""
REPORT_TRIPS = [
    {"kind": "call", "target": "harness.report.run_report:write_report", "nth": 1},
    {"kind": "call", "target": "harness.report.charts:_save", "nth": 1},
    {"kind": "call", "target": "harness.report.run_report:to_html", "nth": 1},
]


def _manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))


def _finished(run_dir: Path) -> bool:
    """The run's manifest says it passed: a kill that lands after that cut nothing."""
    path = run_dir / "manifest.json"
    return path.is_file() and json.loads(path.read_text(encoding="utf-8")).get("status") == "passed"


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _gone(pids: list[int], within: float) -> list[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        if not alive:
            return []
        time.sleep(0.1)
    return alive


def _kill_watching(pid: int, delay: float) -> list[int]:
    """SIGKILL ``pid`` after ``delay``, noting its children (recursive) as they come and go."""
    seen: set[int] = set()
    end = time.monotonic() + delay
    while time.monotonic() < end:
        with contextlib.suppress(psutil.Error):
            seen |= {c.pid for c in psutil.Process(pid).children(recursive=True)}
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    return sorted(seen)


def test_a_track_killed_anywhere_resumes_without_repeating_a_step(tmp_path):
    rng = random.Random(SEED + 1)
    plan = tmp_path / "sigkill.yaml"
    plan.write_text(PLAN)
    runs, models = tmp_path / "runs", tmp_path / "models"
    models.mkdir()
    forks = Forks(gevent=False)
    killed = 0
    try:
        clean = runs / "clean"
        t0 = time.monotonic()
        argv = ["harness", "track", str(plan), "--run-dir", str(clean)]
        status = forks.wait(forks.run(argv, tmp_path, tmp_path / "clean.out"))
        took = time.monotonic() - t0
        assert status == 0, (tmp_path / "clean.out").read_text()[-3000:]
        for i in range(KILLS["track"]):
            trip = REPORT_TRIPS[i % 3] if i % 3 == 2 else None  # a third in the report
            delay = rng.uniform(0.5, took * 0.9)
            for attempt in range(4):
                name = f"trial-{i}" if attempt == 0 else f"trial-{i}-again-{attempt}"
                run_dir, out = runs / name, tmp_path / f"{name}.out"
                argv = ["harness", "track", str(plan), "--run-dir", str(run_dir)]
                pid = forks.run(argv, tmp_path, out, trip)
                children = [] if trip else _kill_watching(pid, delay)
                status = forks.wait(pid)
                if trip or (status != 0 and not _finished(run_dir)):
                    break
                # The run finished before its kill came (or the kill found it past its last write,
                # on its way out): quicker than the clean run it was drawn against (that one loaded
                # the cores more). Not a trial: again, killed sooner.
                delay /= 2
            assert status == -signal.SIGKILL, (i, status, out.read_text()[-3000:])
            killed += 1
            _resume_and_check(forks, plan, run_dir, runs, models, tmp_path, i, trip, children)
    finally:
        forks.close()
    assert killed == KILLS["track"]


def _resume_and_check(forks, plan, run_dir, runs, models, tmp_path, i, trip, children) -> None:
    """The cut named, the step commands gone, then (cleanup first, every other trial) the resume:
    it finishes, repeats no finished step, leaves no engine; cleanup finds nothing left."""
    before = _manifest(run_dir)
    cut = cut_of(before)
    assert cut is not None, before["status"]
    if trip is not None:
        assert cut["step"] == "report", cut
    if cut["step"]:
        assert next(s for s in before["steps"] if s["id"] == cut["step"])["status"] == "running"
    engine = before["engines"].get("practice", {})
    left = _gone([c for c in children if c != engine.get("pid")], 30)
    if sys.platform.startswith("linux"):  # where a step's command can be told its runner died
        assert not left, f"trial {i}: the runner's children {left} outlived it"
    _check_files(run_dir / "labbook.md", run_dir / "labbook.samples.jsonl", set(children))
    passed = {s["id"]: (s["attempts"], s["started"]) for s in before["steps"] if s["status"] == "passed"}
    if i % 2:  # cleanup first: it stops the engine the cut run left and names the cut
        out = tmp_path / f"trial-{i}-cleanup-first.out"
        argv = ["harness", "cleanup", "--runs", str(runs), "--models", str(models)]
        assert forks.wait(forks.run(argv, tmp_path, out)) == 0, out.read_text()[-3000:]
        said = out.read_text()
        assert f"{run_dir}: cut " in said, said
    out = tmp_path / f"trial-{i}-resume.out"
    argv = ["harness", "track", str(plan), "--run-dir", str(run_dir), "--resume"]
    assert forks.wait(forks.run(argv, tmp_path, out)) == 0, out.read_text()[-3000:]
    said = out.read_text()
    where = f"step {cut['step']}" if cut["step"] else "between two steps"
    assert f"the last attempt was cut in {where}" in said, said
    after = _manifest(run_dir)
    assert after["status"] == "passed" and after["cuts"][-1]["step"] == cut["step"]
    for s in after["steps"]:
        assert s["status"] == "passed", s
        if s["id"] in passed and s["kind"] not in ("start", "stop"):
            assert (s["attempts"], s["started"]) == passed[s["id"]], s  # not repeated
    if engine.get("running"):
        assert _gone([engine["pid"]], 20) == [] and wait_port_free("127.0.0.1", engine["port"], 20)
    levels = _check_files(run_dir / "labbook.md", run_dir / "labbook.samples.jsonl", set(children))
    for label, step in (("tiny-a", "practice/sweep:tiny-a"), ("tiny-b", "practice/sweep:tiny-b")):
        if step in passed:  # its levels were written once, by the attempt that finished it
            assert len({r["run_id"] for r in levels if r["label"] == label}) == 1, label
    out = tmp_path / f"trial-{i}-cleanup.out"
    argv = ["harness", "cleanup", "--runs", str(runs), "--models", str(models)]
    assert forks.wait(forks.run(argv, tmp_path, out)) == 0, out.read_text()[-3000:]
    said = out.read_text()
    assert "servers our runs left running: 0" in said and ": cut " not in said, said


def test_a_track_killed_while_it_stops_its_engine_resumes_to_a_pass(tmp_path):
    """A SIGKILL inside a block's stop step, after its measuring steps all finished (CI met it once
    at a random moment): the resume stops what the cut left, and the stop step passes, saying so,
    rather than the run failing with nothing left to do."""
    plan = tmp_path / "sigkill.yaml"
    plan.write_text(PLAN)
    run_dir = tmp_path / "runs" / "cut-in-stop"
    argv = ["harness", "track", str(plan), "--run-dir", str(run_dir)]
    trip = {"kind": "call", "target": "harness.run.engine_control:stop_and_judge", "nth": 1}
    forks = Forks(gevent=False)
    try:
        assert forks.wait(forks.run(argv, tmp_path, tmp_path / "cut.out", trip)) == -signal.SIGKILL
        before = _manifest(run_dir)
        assert cut_of(before)["step"] == "practice/stop"
        engine = before["engines"]["practice"]
        assert engine["running"] and psutil.pid_exists(engine["pid"])  # the cut left it
        out = tmp_path / "resume.out"
        assert forks.wait(forks.run([*argv, "--resume"], tmp_path, out)) == 0, out.read_text()[-3000:]
    finally:
        forks.close()
    after = _manifest(run_dir)
    assert after["status"] == "passed", [(s["id"], s["status"]) for s in after["steps"]]
    stop = next(s for s in after["steps"] if s["id"] == "practice/stop")
    assert stop["status"] == "passed" and "cut while it stopped the engine" in stop["reason"]
    assert _gone([engine["pid"]], 20) == [] and wait_port_free("127.0.0.1", engine["port"], 20)
