"""Load from several Locust worker processes (or containers) under one master in this process.

For when one client process is the limit: ``harness sweep --processes N`` and the compose
launcher's worker containers. Each level's requests are split over the workers by their users;
workers send every exact sample back as it finishes. Imports Locust, as ``harness.load.runner``
does, so it is imported only when load runs.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import gevent
from locust import events as locust_events
from locust.env import Environment

import psutil

from harness.core.levels import account, level_bound
from harness.core.schedules import shares
from harness.core.server_text import safe_text
from harness.core.sample import Sample
from harness.errors import EngineError
from harness.io.metrics_sampler import MetricsSampler
from harness.load.runner import LOCUSTFILE, LevelRun, _Interrupts, _load_user_module, _Teller


@dataclass(frozen=True)
class WorkerLaunch:
    """Workers started elsewhere than as local processes: ``command`` starts one (it ends with the
    locustfile option; the worker options follow), the master listens on ``master_host`` and the
    workers send to ``url``. Containers share the host's CLOCK_MONOTONIC, so their samples' times
    and the level's wall clock mean what a local worker's mean."""

    command: list[str]
    master_host: str
    url: str


class DistributedLoad:
    """Locust master in this process and ``processes`` worker processes (``locust --worker``) on this
    machine, for when one client process is the limit. Each level's requests are split over the
    workers by their users; workers send every exact sample back as it finishes."""

    def __init__(
        self,
        root_url: str,
        processes: int,
        worker_args: list[str],
        connect_timeout: float = 60.0,
        launch: WorkerLaunch | None = None,
    ) -> None:
        user = _load_user_module()
        bind = launch.master_host if launch else "127.0.0.1"
        with socket.socket() as s:
            s.bind((bind, 0))
            port = s.getsockname()[1]
        # The master's host is what its spawn messages hand the workers: the URL they reach.
        url = launch.url if launch else root_url
        self.env = Environment(user_classes=[user.ChatUser], events=locust_events, host=url)
        self.runner = self.env.create_master_runner(bind, port)
        self.samples: list[Sample] = []
        self.runner.register_message(
            "harness_sample", lambda environment, msg, **_: self.samples.append(Sample(**msg.data))
        )
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
        env = {**os.environ, "HARNESS_SWEEP_WORKER": "1"}  # take each level's share from this master
        self.logs: list = []  # each worker's last words (closed in ``close``)
        self.procs: list[subprocess.Popen] = []
        # A signal can land anywhere in here (starting the workers takes a second or two): whatever
        # was started is stopped before it propagates, and each local worker is also told by the
        # kernel to die with this process, however this process ends (SIGKILL included).
        try:
            for _ in range(processes):
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

    def _wait_connected(self, processes: int, connect_timeout: float) -> None:
        deadline = time.monotonic() + connect_timeout
        while len(self.runner.clients.ready) < processes:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                raise EngineError(
                    f"only {len(self.runner.clients.ready)} of {processes} Locust worker processes "
                    f"connected within {connect_timeout:g} s; try fewer --processes"
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

    def _check_workers(self) -> None:
        """EngineError, with the worker's last line, as soon as a worker process has died."""
        for p, log in zip(self.procs, self.logs, strict=True):
            if p.poll() is not None:
                log.seek(0)
                lines = [x for x in log.read().decode("utf-8", "replace").splitlines() if x.strip()]
                last = safe_text(lines[-1] if lines else "(it wrote nothing)", 300)
                raise EngineError(
                    f"a Locust worker process exited with status {p.returncode} during the level: "
                    f"{last}; this level is lost, the finished ones are kept"
                )

    def _spawned(self) -> dict[str, int] | None:
        """Users per worker once every worker has reported this level's spawning complete."""
        from locust.runners import STATE_RUNNING

        clients = list(self.runner.clients.values())
        if clients and all(c.state == STATE_RUNNING for c in clients):
            return {c.id: c.user_count for c in clients}
        return None

    def level(
        self, concurrency: int, count: int, timeout: float, metrics_url: str | None = None, on_progress=None
    ) -> LevelRun:
        self.samples = []
        sampler = MetricsSampler(metrics_url) if metrics_url else None
        procs = [psutil.Process(pid) for pid in self.cpu_pids]
        cpu0 = sum(sum(p.cpu_times()[:2]) for p in procs)
        if sampler:
            sampler.start()
        interrupts = _Interrupts()
        try:
            self.runner.start(concurrency, spawn_rate=max(concurrency, 1))
            deadline = time.monotonic() + 60
            users = self._spawned()
            while (users is None or sum(users.values()) < concurrency) and time.monotonic() < deadline:
                interrupts.wait(0.02)
                users = self._spawned()
            for client_id, share in shares(count, users or {}).items():
                self.runner.send_message("harness_budget", share, client_id=client_id)
            bound_s = level_bound(count, concurrency, timeout)
            deadline = time.monotonic() + bound_s
            # in flight: at most the rest of the budget (the workers do not say what they sent)
            tell = _Teller(on_progress, self.samples, count, lambda: count, time.perf_counter())
            while len(self.samples) < count and time.monotonic() < deadline:
                interrupts.wait(0.02)
                tell()
                self._check_workers()
            interrupts.wait(0)
        finally:
            interrupts.close()
            self.runner.stop()
            if sampler:
                sampler.stop()
        now = time.perf_counter()
        t0 = min((s.t_send for s in self.samples), default=now)
        got = account(list(self.samples), count, count, bound_s, t0, now)
        sends = [s.t_send for s in got]
        ends = [s.t_end for s in got if s.t_end is not None]
        wall = (max(ends) - min(sends)) if ends else 0.0  # one host: the workers share CLOCK_MONOTONIC
        cpu = sum(sum(p.cpu_times()[:2]) for p in procs) - cpu0
        return LevelRun(
            got, wall, cpu / max(wall, 1e-9) / max(len(procs), 1), sampler.summary() if sampler else {}
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


def _stop_all(procs: list[subprocess.Popen], grace_s: float = 10.0) -> None:
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(OSError):
                p.terminate()
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
