"""Run load levels with Locust as a library.

This is the only module of the package that imports Locust (it monkey-patches the standard
library on import), so the CLI imports it only when a sweep runs. The user classes live in
``harness.load.user``, shared with the web UI and headless runs.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import gevent  # noqa: F401  (imported before locust patches, as locust itself does)
from locust import events as locust_events
from locust.env import Environment

import psutil
import urllib3

from harness import signals
from harness.core.bounds import Bounds
from harness.io import http
from harness.core.levels import LEVEL_SLACK_S, account, level_bound
from harness.core.schedules import arrival_offsets, shares
from harness.core.server_text import safe_text
from harness.io.metrics_sampler import MetricsSampler
from harness.core.stream import Sample
from harness.errors import EngineError

LOCUSTFILE = Path(__file__).resolve().parent / "locustfile.py"
urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)


def _load_user_module():
    from harness.load import user

    user._collect.enabled = False  # the sweep collects its own samples
    return user


@dataclass(frozen=True)
class Progress:
    """Where a level stands while it runs (for a live progress line)."""

    done: int  # requests finished (succeeded or failed)
    budget: int | None  # the level's requests, None for a timed level
    in_flight: int
    output_tokens: int  # of the finished requests
    elapsed_s: float


PROGRESS_EVERY_S = 0.5


class _Teller:
    """Calls ``on_progress`` with a ``Progress`` at most every ``PROGRESS_EVERY_S`` (none: nothing)."""

    def __init__(self, on_progress, collected: list, budget: int | None, issued, t0: float) -> None:
        self.on_progress, self.collected, self.budget, self.issued = on_progress, collected, budget, issued
        self.t0 = self.last = t0

    def __call__(self) -> None:
        now = time.perf_counter()
        if self.on_progress is None or now - self.last < PROGRESS_EVERY_S:
            return
        self.last = now
        done = len(self.collected)
        tokens = sum(s.output_tokens or 0 for s in self.collected if s.ok)
        self.on_progress(Progress(done, self.budget, max(self.issued() - done, 0), tokens, now - self.t0))


class _Interrupts:
    """Ctrl-C and SIGTERM (a CI timeout, `kill`) taken by the main greenlet between waits, never
    inside a user's greenlet (where it would print a traceback and leave the level half-stopped),
    so an interrupted sweep keeps its finished levels; the same for one process and for
    ``--processes``. While a level runs, ``harness.signals`` only records a signal (``defer``) and
    ``wait`` raises it; a signal that comes while the level is being stopped stays recorded and
    ends the sweep before its next level (``signals.raise_if_received``). (Per-level event-loop
    watchers used to be cancelled with a signal still pending in them: it was lost.)"""

    def __init__(self) -> None:
        signals.defer(True)

    def wait(self, seconds: float) -> None:
        """Sleep, or raise KeyboardInterrupt once a signal came."""
        signals.raise_if_received()
        if seconds:
            gevent.sleep(seconds)

    def close(self) -> None:
        signals.defer(False)


@dataclass
class LevelRun:
    samples: list[Sample]
    wall_s: float
    client_cpu: float
    metrics: dict = field(default_factory=dict)


def run_closed_level(
    root_url: str,
    workload_kwargs: dict,
    concurrency: int,
    count: int,
    timeout: float,
    metrics_url: str | None = None,
    on_progress=None,
) -> LevelRun:
    """``concurrency`` users, each sending its next request when the last one ends, until
    ``count`` requests have finished (the level's budget)."""
    user = _load_user_module()
    workload = user.Workload(budget=count, **workload_kwargs)
    return _drive(
        root_url, user.ChatUser, workload, concurrency, count, timeout, metrics_url, on_progress=on_progress
    )


# Complexity allowed: the level's event loop: start, watch, stop, drain in one place.
def _drive(  # noqa: C901
    root_url: str,
    user_class,
    workload,
    users: int,
    count: int | None,
    timeout: float,
    metrics_url: str | None,
    duration: float | None = None,
    spawn_rate: float | None = None,
    on_progress=None,
    bound_s: float | None = None,
) -> LevelRun:
    """Start ``users`` Locust users on ``workload``; stop when ``count`` samples are in, or, for a
    timed level, when the duration is over and every request already sent has finished.
    ``on_progress`` hears a ``Progress`` about twice a second while the level runs."""
    env = Environment(user_classes=[user_class], events=locust_events, host=root_url)
    env.harness_workload = workload
    env.harness_workload_external = True
    collected: list[Sample] = []

    def listener(request_type, name, context=None, **_kw):
        if name == "chat" and context and "sample" in context:
            collected.append(context["sample"])

    env.events.request.add_listener(listener)
    headers = http.auth_headers(workload.api_key)  # an engine with a key guards /metrics too
    sampler = MetricsSampler(metrics_url, headers=headers) if metrics_url else None
    proc = psutil.Process()
    cpu0 = proc.cpu_times()
    runner = env.create_local_runner()
    if sampler:
        sampler.start()
    # A full garbage collection pauses every stream for milliseconds; a level is bounded, so the
    # collector waits until it ends (reference counting still frees almost everything at once).
    gc.collect()
    gc.disable()
    interrupts = _Interrupts()
    t0 = time.perf_counter()
    tell = _Teller(on_progress, collected, count, lambda: workload.issued, t0)
    try:
        runner.start(users, spawn_rate=spawn_rate or max(users, 1))
        if duration is not None:
            end = time.monotonic() + duration
            while time.monotonic() < end:
                interrupts.wait(min(0.05, max(0.0, end - time.monotonic())))
                tell()
            workload.budget = 0  # send nothing more; let what is in flight finish
            count = workload.issued
            bound_s = duration + timeout + LEVEL_SLACK_S
        if bound_s is None:
            bound_s = level_bound(count or 0, users, timeout)
        deadline = t0 + bound_s
        while len(collected) < count and time.perf_counter() < deadline:
            interrupts.wait(0.02)
            tell()
        interrupts.wait(0)
        collected[:] = account(collected, count, workload.issued, bound_s, t0, time.perf_counter())
    finally:
        interrupts.close()
        gc.enable()
        runner.stop()
        runner.quit()
        env.events.request.remove_listener(listener)
        if sampler:
            sampler.stop()
    ends = [s.t_end for s in collected if s.t_end is not None]
    wall = (max(ends) - t0) if ends else time.perf_counter() - t0
    cpu1 = proc.cpu_times()
    client_cpu = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / max(wall, 1e-9)
    return LevelRun(collected, wall, client_cpu, sampler.summary() if sampler else {})


def run_open_level(
    root_url: str,
    workload_kwargs: dict,
    rate: float,
    count: int,
    poisson: bool,
    timeout: float,
    metrics_url: str | None = None,
    seed: int = 1,
    on_progress=None,
) -> LevelRun:
    """``count`` requests arriving at ``rate`` per second (open loop), each on its own greenlet."""
    user = _load_user_module()
    workload = user.Workload(budget=count, **workload_kwargs)
    workload.arrivals = arrival_offsets(rate, count, poisson, seed)
    bound = workload.arrivals[-1] + timeout + 1.0 + LEVEL_SLACK_S  # the last arrival, then its bound
    return _drive(
        root_url,
        user.ArrivalUser,
        workload,
        1,
        count,
        timeout,
        metrics_url,
        bound_s=bound,
        on_progress=on_progress,
    )


def run_timed_level(
    root_url: str,
    workload_kwargs: dict,
    concurrency: int,
    duration: float,
    timeout: float,
    metrics_url: str | None = None,
    spawn_rate: float | None = None,
    ramp_s: float = 0.0,
    on_progress=None,
) -> LevelRun:
    """Closed loop for ``duration`` seconds; then no new requests, and the ones in flight finish.
    ``ramp_s`` spreads the users' first requests evenly over that many seconds (Locust itself
    starts a whole second's worth of users at once)."""
    user = _load_user_module()
    workload = user.Workload(budget=None, **workload_kwargs)
    workload.start_spacing_s = ramp_s / max(concurrency, 1)
    return _drive(
        root_url,
        user.ChatUser,
        workload,
        concurrency,
        None,
        timeout,
        metrics_url,
        duration=duration,
        spawn_rate=spawn_rate,
        on_progress=on_progress,
    )


def check_models(base_url: str, model: str, api_key: str | None, timeout: float = 10.0) -> list[str]:
    """The ids the server lists at /models ([] when it lists none or the route is missing); under
    the same two bounds as every request (TargetError, one line, when it breaks them)."""
    # Certificates are not verified, as by the load client: local endpoints often use self-signed ones.
    return http.model_ids(http.get_models(base_url, api_key, Bounds.of(timeout), verify=False))


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
        import socket
        import subprocess

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
        # a worker's last words (closed in ``close``)
        self.logs = [tempfile.TemporaryFile() for _ in range(processes)]  # noqa: SIM115
        self.procs = [
            subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env) for log in self.logs
        ]
        deadline = time.monotonic() + connect_timeout
        while len(self.runner.clients.ready) < processes:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                self.close()
                raise EngineError(
                    f"only {len(self.runner.clients.ready)} of {processes} Locust worker processes "
                    f"connected within {connect_timeout:g} s; try fewer --processes"
                )
            gevent.sleep(0.1)
        # Whose CPU the client CPU figure counts: the workers themselves. A container's worker is a
        # process of this machine too (one kernel), found by its unique master port; the compose
        # client that started it (same arguments) is left out.
        self.cpu_pids = [p.pid for p in self.procs] if launch is None else self._container_workers(port)

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
        try:
            self.runner.quit()
        finally:
            for p in self.procs:
                if p.poll() is None:
                    p.terminate()
            for p in self.procs:
                try:
                    p.wait(10)
                except Exception:
                    p.kill()
            for log in self.logs:
                log.close()
