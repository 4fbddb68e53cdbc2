"""Locust workers on other hosts: the sweep's master, two workers and the
engine (the practice server) each in a network namespace of its own, with its own address on a
bridge that lives in a fifth namespace. Nothing has a route out of them, so no packet leaves this
machine; the namespaces (and every process in them, all started here) are removed whatever
happens. Needs root and iproute2 (CI has both); skipped, saying so, elsewhere.

What it proves: every request's exact sample reaches the master, the level's percentiles are
nearest-rank over all the workers' samples pooled, each worker's share shows in the output and the
record, the wall is the master's own clock, and a worker killed mid-level is named with what of
its share never came back while the run ends in one line, keeping what it measured."""

from __future__ import annotations

import contextlib
import os
import queue
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.records.base import LAB_ID
from harness.measure.stats import percentile
from harness.records.notebook import read_records
from tests.conftest import ROOT
from tests.integration.deadlines import START_S

SUBNET = "10.213.0"
MASTER, W1, W2, ENGINE = f"{SUBNET}.1", f"{SUBNET}.2", f"{SUBNET}.3", f"{SUBNET}.4"
ENGINE_PORT, MASTER_PORT = 8099, 5557
HARNESS = [sys.executable, "-m", "harness"]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


def _skip_reason() -> str | None:
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux's"
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs as root)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    return None


class Hosts:
    """Four namespaces as four hosts on one bridge; every process started in them is kept here and
    ended by its own id."""

    def __init__(self, tmp: Path) -> None:
        tag = f"h37{os.getpid() % 10000}{secrets.token_hex(2)}"
        self.ns = {name: f"{tag}-{name}" for name in ("sw", "m", "w1", "w2", "e")}
        self.address = {"m": MASTER, "w1": W1, "w2": W2, "e": ENGINE}
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []

    def up(self) -> None:
        for ns in self.ns.values():
            _ip("netns", "add", ns)
        sw = self.ns["sw"]
        _ip("-n", sw, "link", "add", "br0", "type", "bridge")
        _ip("-n", sw, "link", "set", "br0", "up")
        for i, (host, address) in enumerate(self.address.items()):
            ns = self.ns[host]
            _ip("-n", sw, "link", "add", f"p{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("-n", sw, "link", "set", f"p{i}", "master", "br0")
            _ip("-n", sw, "link", "set", f"p{i}", "up")
            _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")

    def start(self, host: str, args: list[str], name: str, stdout=None) -> subprocess.Popen:
        """``args`` in ``host``'s namespace (``ip netns exec`` execs it: the process is the command)."""
        err = open(self.tmp / f"{name}.err", "wb")  # noqa: SIM115  (closed with the test's tmp)
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns[host], *args],
            stdout=stdout if stdout is not None else open(self.tmp / f"{name}.out", "wb"),  # noqa: SIM115
            stderr=err,
            cwd=ROOT,
            text=stdout is not None,
        )
        self.procs.append(proc)
        return proc

    def down(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        for ns in self.ns.values():
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                _ip("netns", "del", ns)


# .ci/run sets this where it runs as root with `ip`: the test then fails instead of skipping
REQUIRED = os.environ.get("HARNESS_NETNS_REQUIRED") == "1"


@pytest.fixture
def hosts(tmp_path):
    reason = _skip_reason()
    if reason and REQUIRED:
        pytest.fail(f"network namespaces are required here (HARNESS_NETNS_REQUIRED=1), but {reason}")
    if reason:
        pytest.skip(reason)
    net = Hosts(tmp_path)
    try:
        try:
            net.up()
        except subprocess.CalledProcessError as exc:
            if REQUIRED:
                raise
            pytest.skip(f"`ip netns` is not allowed here: {exc.stderr.strip()}")
        yield net
    finally:
        net.down()
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
    assert not any(ns in left for ns in net.ns.values()), left


def _engine(net: Hosts) -> str:
    """The practice server in its namespace, once it says it listens: its base URL."""
    log = net.tmp / "engine.out"
    proc = net.start("e", [*HARNESS, "practice", "--host", ENGINE, "--port", str(ENGINE_PORT)], "engine")
    deadline = time.monotonic() + START_S  # a hang only: its start line proves it is up
    while time.monotonic() < deadline and "listening on" not in log.read_text(errors="replace"):
        assert proc.poll() is None, (net.tmp / "engine.err").read_text()
        time.sleep(0.2)
    assert "listening on" in log.read_text(), "the practice server did not start"
    return f"http://{ENGINE}:{ENGINE_PORT}"


def _sweep_args(net: Hosts, url: str, book: Path, concurrency: str, requests: int, tokens: int) -> list[str]:
    return [
        *HARNESS,
        "sweep",
        "--base-url",
        url,
        "--model",
        "local-chat",
        "--concurrency",
        concurrency,
        "--requests",
        str(requests),
        "--max-tokens",
        str(tokens),
        "--label",
        "hosts",
        "--labbook",
        str(book),
        "--expect-workers",
        "2",
        "--master-host",
        MASTER,
        "--master-port",
        str(MASTER_PORT),
        "--worker-wait",
        str(START_S),
    ]


def _workers(net: Hosts) -> dict[str, subprocess.Popen]:
    cmd = [*HARNESS, "worker", "--master-host", MASTER, "--master-port", str(MASTER_PORT)]
    return {name: net.start(name, [*cmd, "--name", name], name) for name in ("w1", "w2")}


def _levels(book: Path) -> list[dict]:
    result = read_records(book, "level", select=lambda o: o.get("lab") == LAB_ID and "concurrency" in o)
    assert not result.warnings  # each validated against schemas/level.schema.json
    return result.records


def _samples(book: Path) -> list[dict]:
    import json

    return [json.loads(line) for line in book.with_suffix(".samples.jsonl").read_text().splitlines()]


def test_two_workers_on_their_own_hosts_send_every_sample_to_the_master(hosts, tmp_path):
    url = _engine(hosts)
    book = tmp_path / "book.md"
    master = hosts.start("m", _sweep_args(hosts, url, book, "2,4", 12, 16), "master")
    _workers(hosts)
    # a hang only: both ends' starts, then two levels of 12 short answers (seconds)
    master.wait(timeout=3 * START_S)
    out, err = (tmp_path / "master.out").read_text(), (tmp_path / "master.err").read_text()
    assert master.returncode == 0, out + err
    assert "Traceback" not in out + err
    assert f"harness worker --master-host {MASTER} --master-port {MASTER_PORT}" in out
    assert "load from 2 Locust worker(s) on other hosts" in out
    rows = _samples(book)
    for rec in _levels(book):
        c = rec["concurrency"]
        mine = [r for r in rows if r["concurrency"] == c]
        # every request's exact sample reached the master, each saying which worker sent it
        assert rec["requests"] == rec["completed"] == len(mine) == 12, rec
        assert rec["processes"] == 2 and rec["wall_clock"] == "master"
        shares = {w["worker"]: w for w in rec["workers"]}
        assert set(shares) == {"w1", "w2"}
        for name, w in shares.items():
            assert w["users"] == c // 2 and w["requests"] == w["returned"] == w["completed"] == 6, w
            assert sum(r["worker"] == name for r in mine) == 6
            assert f"worker {name}: {c // 2} user(s), 6 of 6 requests back (6 ok)" in out
        # the level's percentiles: nearest rank over both workers' samples pooled
        ttfts = [r["ttft_s"] for r in mine if r["ok"]]
        for p in (50, 90, 95, 99):
            assert rec["ttft_s"][f"p{p}"] == pytest.approx(percentile(ttfts, p), abs=2e-4), p
        # the wall is the master's own clock: at least the longest request, well under the level's bound
        assert max(r["end_s"] for r in mine) <= rec["wall_s"] < 60


def _first_answer(hosts, args: list) -> tuple:
    """The master started with its two workers, once a request of the first level (c=2 of 400)
    has come back: (the master, its output lines still to read, the workers, the lines read)."""
    master = hosts.start("m", args, "master", stdout=subprocess.PIPE)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in master.stdout], daemon=True).start()
    workers = _workers(hosts)
    seen, deadline = [], time.monotonic() + 3 * START_S  # a hang only: the starts, then one answer
    while time.monotonic() < deadline:
        with contextlib.suppress(queue.Empty):
            seen.append(lines.get(timeout=0.5))
            done = re.search(r"c=2: (\d+)/400 requests", seen[-1])
            if done and int(done.group(1)) >= 1:
                return master, lines, workers, seen
        assert master.poll() is None, "".join(seen)
    pytest.fail("no request of the first level finished: " + "".join(seen))


def test_a_worker_host_lost_mid_level_is_named_and_the_run_ends_with_what_it_measured(hosts, tmp_path):
    url = _engine(hosts)
    book = tmp_path / "book.md"
    # 400 requests of 64 tokens at c = 2: minutes of work, so the kill below lands mid-level
    args = _sweep_args(hosts, url, book, "2,4", 400, 64)
    master, lines, workers, seen = _first_answer(hosts, args)
    workers["w2"].send_signal(signal.SIGKILL)  # its host gone: no quit message, its heartbeats stop
    # a hang only: the loss is seen within Locust's heartbeat liveness (3 s), then the other
    # worker's request in flight (about a second); the level's own bound is 400 rounds of 300 s
    master.wait(timeout=START_S)
    out = "".join(seen)
    with contextlib.suppress(queue.Empty):
        while True:
            out += lines.get(timeout=1)
    err = (tmp_path / "master.err").read_text()
    assert master.returncode == 2, out + err
    assert "Traceback" not in out + err
    said = [x for x in err.splitlines() if x.startswith("harness sweep: a Locust worker was lost")]
    assert len(said) == 1 and "worker w2 sent no heartbeat" in said[0] and "never came back" in said[0], err
    (rec,) = _levels(book)  # the level that lost a worker is kept; no further level ran
    shares = {w["worker"]: w for w in rec["workers"]}
    lost, kept = shares["w2"], shares["w1"]
    assert "sent no heartbeat" in lost["lost"] and "lost" not in kept
    gone = lost["requests"] - lost["returned"]
    assert gone > 0 and rec["requests"] == 400
    rows = _samples(book)
    lost_rows = [r for r in rows if (r["error"] or "").startswith("WorkerLost: worker w2")]
    assert len(rows) == 400 and len(lost_rows) == gone
    assert sum(r["worker"] == "w2" for r in rows) == lost["requests"]  # returned and lost alike
    # w1 was told to stop sending: its requests in flight came back, the rest are counted as not sent
    assert rec["completed"] == lost["completed"] + kept["completed"]
    assert rec["failed"] == 400 - rec["completed"] and rec["cancelled"] == kept["requests"] - kept["returned"]
    assert "LOST: sent no heartbeat" in out


def test_a_worker_cut_off_the_network_is_named_and_ends_by_itself(hosts, tmp_path):
    """w2's link to the bridge dropped mid-level: the master hears no heartbeat for 3 s and names
    it, keeping what it measured; w2, which hears no master either, ends by itself in one line."""
    from harness.load.worker import MASTER_GONE_S

    url = _engine(hosts)
    book = tmp_path / "book.md"
    args = _sweep_args(hosts, url, book, "2,4", 400, 64)
    master, lines, workers, seen = _first_answer(hosts, args)
    port = list(hosts.address).index("w2")
    _ip("-n", hosts.ns["sw"], "link", "set", f"p{port}", "down")  # w2's cable pulled
    master.wait(timeout=START_S)  # a hang only: the heartbeat liveness, then w1's request in flight
    t0 = time.monotonic()
    workers["w2"].wait(timeout=MASTER_GONE_S + 30)  # by itself: nothing kills it here
    took = time.monotonic() - t0
    err = (tmp_path / "master.err").read_text()
    assert master.returncode == 2, err
    said = [x for x in err.splitlines() if x.startswith("harness sweep: a Locust worker was lost")]
    assert len(said) == 1 and "worker w2 sent no heartbeat" in said[0], err
    (rec,) = _levels(book)
    (lost,) = [w for w in rec["workers"] if w.get("lost")]
    assert lost["worker"] == "w2" and lost["requests"] > lost["returned"]
    words = (tmp_path / "w2.err").read_text()
    gone = [
        x
        for x in words.splitlines()
        if x.startswith("harness worker w2: no heartbeat from the sweep's master")
    ]
    assert len(gone) == 1 and f"{MASTER}:{MASTER_PORT}" in gone[0], words
    assert took < MASTER_GONE_S + 15  # the master's own end came first; w2's 20 s ran from the cut
