"""Load from several Locust workers under one master in this process: local worker processes
(``--processes N``), the compose launcher's containers, or workers on other hosts
(``--expect-workers N``, each started there by ``harness worker``; docs/workers.md). Each level's
requests are split over the workers by their users; each sends every exact sample back, and the
master keeps whose it was. No two hosts' clocks are subtracted: with remote workers the level's
wall is the master's own clock. A worker lost mid-level (killed, frozen, cut off) is named with
what of its share never came back; the others stop sending and their requests in flight are waited
for. One lost between levels ends the sweep before the next. Imports Locust (as
``harness.load.runner`` does): imported only when load runs."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import gevent
from locust import argument_parser
from locust import events as locust_events
from locust.env import Environment
from locust.runners import HEARTBEAT_LIVENESS, STATE_MISSING, STATE_RUNNING

import psutil

from harness.load import worker_parts as parts_of
from harness.measure.levels import account, level_bound
from harness.workloads.schedules import shares
from harness.safe_text import safe_text
from harness.measure.sample import Sample
from harness.errors import EngineError
from harness.engines.metrics_sampler import MetricsSampler
from harness.exporter.live import LIVE
from harness.engines.ports import free_port
from harness.load.runner import LOCUSTFILE, LevelRun, _Interrupts, _load_user_module, _Teller
from harness.load.worker import NAME_ENV

LOCAL_NAME = "process-{}"  # the name each local worker process gives itself


@dataclass(frozen=True)
class WorkerLaunch:
    """Workers started elsewhere than as local processes: ``command`` starts one (it ends with the
    locustfile option; the worker options follow), the master listens on ``master_host`` and the
    workers send to ``url``. Containers share the host's CLOCK_MONOTONIC, so their samples' times
    and the level's wall clock mean what a local worker's mean."""

    command: list[str]
    master_host: str
    url: str


@dataclass(frozen=True)
class RemoteWorkers:
    """Workers a person starts on other hosts (``harness worker --master-host BIND --master-port
    PORT``): the master listens on ``bind``:``port`` and waits up to ``wait_s`` for ``count`` of
    them; they load ``url`` (the server as they reach it) with the sweep's options, which Locust
    hands them in its spawn message."""

    count: int
    bind: str
    port: int
    url: str
    wait_s: float = 300.0


class DistributedLoad:
    """Locust master in this process and ``processes`` worker processes (``locust --worker``) on this
    machine, or containers (``launch``), or ``remote`` workers on other hosts. Each level's
    requests are split over the workers by their users; workers send every exact sample back as
    it finishes."""

    def __init__(
        self,
        root_url: str,
        processes: int,
        worker_args: list[str],
        connect_timeout: float = 60.0,
        launch: WorkerLaunch | None = None,
        remote: RemoteWorkers | None = None,
    ) -> None:
        user = _load_user_module()
        bind = remote.bind if remote else launch.master_host if launch else "127.0.0.1"
        port = remote.port if remote and remote.port else free_port(bind)
        # The master's host is what its spawn messages hand the workers: the URL they reach.
        url = remote.url if remote else launch.url if launch else root_url
        self.env = Environment(user_classes=[user.ChatUser], events=locust_events, host=url)
        # the workers' options travel in Locust's spawn message (a remote worker's command line
        # names only the master); this process's own listeners leave the master alone
        self.env.parsed_options = argument_parser.get_parser(default_config_files=[]).parse_args(
            ["-f", str(LOCUSTFILE), *worker_args]
        )
        self.env.harness_workload_external = True
        self.runner = self.env.create_master_runner(bind, port)
        self.address = f"{bind}:{port}"
        self.expected = remote.count if remote else processes
        self.shared_clock = remote is None  # local processes and containers: one kernel's clock
        self.samples: list[Sample] = []
        self.names: dict[str, str] = {}  # Locust's client id -> the name the worker gave itself
        self.parts: dict[str, parts_of.WorkerPart] = {}  # this level's workers by client id
        self.last_receipt = 0.0
        self.runner.register_message("harness_samples", self._on_samples)
        self.runner.register_message("harness_hello", self._on_hello)
        self.runner.register_message("harness_drained", self._on_drained)
        self.logs: list = []  # each worker's last words (closed in ``close``)
        self.procs: list[subprocess.Popen] = []
        self.cpu_pids: list[int] = []
        if remote:
            self._wait_connected(remote.count, remote.wait_s)
            return
        start = launch.command if launch else [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE)]
        cmd = [
            *start,
            "--worker",
            "--master-host",
            bind,
            "--master-port",
            str(port),
            "--host",
            url,
            *worker_args,
        ]
        # A signal can land anywhere in here (starting the workers takes a second or two): whatever
        # was started is stopped before it propagates, and each local worker is also told by the
        # kernel to die with this process, however this process ends (SIGKILL included).
        try:
            for i in range(processes):
                # take each level's share from this master; the name it answers to
                env = {**os.environ, "HARNESS_SWEEP_WORKER": "1", NAME_ENV: LOCAL_NAME.format(i + 1)}
                self.logs.append(tempfile.TemporaryFile())  # noqa: SIM115
                self.procs.append(
                    subprocess.Popen(
                        cmd,
                        stdout=subprocess.DEVNULL,
                        stderr=self.logs[-1],
                        env=env,
                        preexec_fn=None if launch else functools.partial(_die_with_parent, os.getpid()),
                    )
                )
            self._wait_connected(processes, connect_timeout)
        except BaseException:
            self.close()
            raise
        # Whose CPU the client CPU figure counts: the workers themselves. A container's worker is a
        # process of this machine too (one kernel), found by its unique master port; the compose
        # client that started it (same arguments) is left out.
        self.cpu_pids = [p.pid for p in self.procs] if launch is None else self._container_workers(port)

    def _on_samples(self, environment, msg, **_) -> None:
        part = self.parts.get(msg.node_id)
        if part is None:  # not one of this level's workers (a straggler of an ended level)
            return
        worker = self.names.get(msg.node_id, msg.node_id)
        for data in msg.data:
            sample = Sample(**data)
            sample.tags = {**sample.tags, "worker": worker}
            part.samples.append(sample)
            self.samples.append(sample)
            LIVE.observe(sample)  # the live figures (harness.exporter.live), as each arrives
        self.last_receipt = time.perf_counter()

    def _on_hello(self, environment, msg, **_) -> None:
        name = safe_text(str((msg.data or {}).get("name") or msg.node_id), 80)
        taken = set(self.names.values())
        self.names[msg.node_id] = name if name not in taken else f"{name}#{len(self.names) + 1}"

    def _on_drained(self, environment, msg, **_) -> None:
        part = self.parts.get(msg.node_id)
        if part is not None:
            part.issued = int(msg.data)

    def _wait_connected(self, expected: int, connect_timeout: float) -> None:
        deadline = time.monotonic() + connect_timeout
        while len(self.runner.clients.ready) < expected:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                got = len(self.runner.clients.ready)
                if self.procs:
                    raise EngineError(
                        f"only {got} of {expected} Locust worker processes "
                        f"connected within {connect_timeout:g} s; try fewer --processes"
                    )
                names = ", ".join(sorted(self.names.get(c.id, c.id) for c in self.runner.clients.ready))
                raise EngineError(
                    f"only {got} of {expected} Locust workers connected to {self.address} within "
                    f"{connect_timeout:g} s{f' ({names})' if names else ''}; on each worker host run "
                    f"`harness worker --master-host HOST --master-port {self.address.rsplit(':', 1)[1]}` "
                    "with HOST this machine's address as that host reaches it, and let that TCP port "
                    "through this machine's firewall from the worker hosts"
                )
            gevent.sleep(0.1)

    def _container_workers(self, port: int) -> list[int]:
        """The workers' own processes: not the compose clients (nor their plugin children), not
        the containers' init (docker-init), though all carry the same arguments."""
        clients = set()
        for p in self.procs:
            with contextlib.suppress(psutil.Error):
                clients |= {p.pid, *(c.pid for c in psutil.Process(p.pid).children(recursive=True))}
        found = []
        for proc in psutil.process_iter(["pid", "cmdline"]):
            cmd = proc.info["cmdline"] or []
            init = bool(cmd) and Path(cmd[0]).name in ("docker-init", "tini")
            if proc.info["pid"] not in clients and not init and "--worker" in cmd and str(port) in cmd:
                found.append(proc.info["pid"])
        return found

    def _exited(self) -> None:
        """A local worker process that has ended is lost: named by its part, with its last line
        (EngineError, as before, where no part of this level is its own)."""
        for i, (p, log) in enumerate(zip(self.procs, self.logs, strict=True)):
            if p.poll() is None:
                continue
            name = LOCAL_NAME.format(i + 1)
            part = next((x for cid, x in self.parts.items() if self.names.get(cid) == name), None)
            if part is not None and part.lost:
                continue
            log.seek(0)
            lines = [x for x in log.read().decode("utf-8", "replace").splitlines() if x.strip()]
            last = safe_text(lines[-1] if lines else "(it wrote nothing)", 300)
            why = f"exited with status {p.returncode}: {last}"
            if part is None:
                raise EngineError(
                    f"a Locust worker process {why} during the level; this level is lost, the "
                    "finished ones are kept"
                )
            part.lost = f"(a local Locust worker process) {why}"

    def _watch(self) -> bool:
        """Each worker's heartbeat CPU read, each loss noted; True once a worker of the level is lost."""
        self._exited()
        for cid, part in self.parts.items():
            if part.lost:
                continue
            client = self.runner.clients.get(cid)
            if client is None:
                part.lost = "quit (stopped on its host) before it returned its share"
            elif client.state == STATE_MISSING:
                part.lost = (
                    f"sent no heartbeat for {HEARTBEAT_LIVENESS} s (its host down or too busy to "
                    "answer, the network cut, or its process killed)"
                )
            else:
                part.cpu.append(float(client.cpu_usage))
        return any(p.lost for p in self.parts.values())

    def _not_running(self) -> list:
        return [c for c in self.runner.clients.values() if c.state != STATE_RUNNING]

    def _lost_before_level(self) -> None:
        """A worker lost between levels (exited, or silent past Locust's heartbeat liveness):
        EngineError naming it, rather than a wait for users it will never start."""
        self._exited()
        missing = [c for c in self.runner.clients.values() if c.state == STATE_MISSING]
        if missing or len(self.runner.clients) < self.expected:
            names = ", ".join(sorted(self.names.get(c.id, c.id) for c in missing)) or "one"
            raise EngineError(
                f"a Locust worker was lost before the level began: {names} sent no heartbeat for "
                f"{HEARTBEAT_LIVENESS} s or quit; this level is lost, the finished ones are kept"
            )

    def _spawned(self) -> dict[str, int] | None:
        """Users per worker once every worker has reported this level's spawning complete."""
        clients = list(self.runner.clients.values())
        if clients and all(c.state == STATE_RUNNING for c in clients):
            return {c.id: c.user_count for c in clients}
        return None

    def _drain(self, deadline: float, interrupts: _Interrupts) -> None:
        """A worker was lost: every other one stops sending (its budget emptied) and says how many
        it had sent; its requests in flight are waited for, until the level's own bound."""
        alive = [cid for cid, p in self.parts.items() if not p.lost and p.share]
        for cid in alive:
            self.runner.send_message("harness_drain", None, client_id=cid)
        while time.monotonic() < deadline:
            self._watch()
            survivors = [self.parts[cid] for cid in alive if not self.parts[cid].lost]
            if all(p.issued is not None and len(p.samples) >= p.issued for p in survivors):
                return
            interrupts.wait(0.02)

    def level(
        self, concurrency: int, count: int, timeout: float, metrics_url: str | None = None, on_progress=None
    ) -> LevelRun:
        self.samples, self.parts = [], {}
        sampler = MetricsSampler(metrics_url) if metrics_url else None
        procs = [psutil.Process(pid) for pid in self.cpu_pids]
        cpu0 = _cpu_seconds(procs)
        if sampler:
            sampler.start()
        interrupts = _Interrupts()
        lost = False
        try:
            self.runner.start(concurrency, spawn_rate=max(concurrency, 1))
            deadline = time.monotonic() + 60
            users = self._spawned()
            while (users is None or sum(users.values()) < concurrency) and time.monotonic() < deadline:
                interrupts.wait(0.02)
                self._lost_before_level()
                users = self._spawned()
            if users is None:
                slow = ", ".join(sorted(self.names.get(c.id, c.id) for c in self._not_running()))
                raise EngineError(
                    f"Locust worker(s) {slow} did not start their users within 60 s; this level is "
                    "lost, the finished ones are kept"
                )
            split = shares(count, users or {})
            self.parts = {
                cid: parts_of.WorkerPart(self.names.get(cid, cid), users[cid] if users else 0, n)
                for cid, n in split.items()
            }
            t_start = time.perf_counter()  # the master's clock: the shares go out now
            for client_id, share in split.items():
                self.runner.send_message("harness_budget", share, client_id=client_id)
            bound_s = level_bound(count, concurrency, timeout)
            deadline = time.monotonic() + bound_s
            # in flight: at most the rest of the budget (the workers do not say what they sent)
            tell = _Teller(on_progress, self.samples, count, lambda: count, t_start)
            while len(self.samples) < count and time.monotonic() < deadline:
                interrupts.wait(0.02)
                tell()
                if self._watch():
                    lost = True
                    self._drain(deadline, interrupts)
                    break
            interrupts.wait(0)
        finally:
            interrupts.close()
            self.runner.stop()
            if sampler:
                sampler.stop()
        now = time.perf_counter()
        parts = list(self.parts.values())
        if lost:
            names = ", ".join(p.name for p in parts if p.lost)
            first = sorted(parts, key=lambda p: not p.lost)  # the lost worker's first: the first error
            got = [s for p in first for s in parts_of.fill(p, names, t_start, now)]
        else:
            got = account([s for p in parts for s in p.samples], count, count, bound_s, t_start, now)
        if self.shared_clock:  # one host: the workers and the master share CLOCK_MONOTONIC
            ends = [s.t_end for s in got if s.t_end is not None]
            sends = [s.t_send for s in got]
            wall = (max(ends) - min(sends)) if ends else 0.0
            cpu1 = _cpu_seconds(procs)
            cpu = sum(cpu1[pid] - cpu0[pid] for pid in cpu1 if pid in cpu0)
            client_cpu = cpu / max(wall, 1e-9) / max(len(cpu1), 1)
        else:  # hosts of their own: the master's clock alone, never a worker's against another's
            wall = (self.last_receipt if self.last_receipt > t_start else now) - t_start
            client_cpu = parts_of.busiest_cpu(parts)
        return LevelRun(
            got,
            wall,
            client_cpu,
            sampler.summary() if sampler else {},
            workers=parts_of.entries(parts),
            wall_clock="samples" if self.shared_clock else "master",
            lost=parts_of.lost_line(parts, concurrency) if lost else None,
            readings=sampler.readings() if sampler and self.shared_clock else [],
        )

    def close(self) -> None:
        """Stop the master and every worker process: asked first, killed after 10 s; a second
        signal during it cuts the wait short, never the killing."""
        try:
            self.runner.quit()
        finally:
            _stop_all(self.procs)
            for log in self.logs:
                log.close()


def _cpu_seconds(procs: list[psutil.Process]) -> dict[int, float]:
    """User and system seconds of each worker process still there (a lost one is left out)."""
    seconds = {}
    for p in procs:
        with contextlib.suppress(psutil.Error):
            seconds[p.pid] = sum(p.cpu_times()[:2])
    return seconds


def _stop_all(procs: list[subprocess.Popen], grace_s: float = 10.0) -> None:
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(OSError):
                p.terminate()
                p.send_signal(signal.SIGCONT)  # a frozen one (SIGSTOP) takes its TERM now, not at the KILL
    deadline = time.monotonic() + grace_s
    try:
        for p in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(max(deadline - time.monotonic(), 0.01))
    finally:  # what has not ended by now (or when an interrupt cut the wait) is killed
        for p in procs:
            if p.poll() is None:
                with contextlib.suppress(OSError):
                    p.kill()
                    p.wait(5)


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that started it ends


def _die_with_parent(parent: int) -> None:
    """In a local worker, before it runs: SIGKILL it when the sweep's process ends, however it
    ends (a worker holds nothing to save: its samples are the master's). Linux only; elsewhere
    ``close`` alone stops the workers."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the sweep ended before the prctl took: end at once
        os._exit(1)
