"""Run load levels with Locust as a library.

This module and ``harness.load.distributed`` (several worker processes under one master) are the
only ones of the package that import Locust (it monkey-patches the standard library on import),
so the CLI imports them only when a sweep runs. The user classes live in
``harness.load.users``, shared with the web UI and headless runs.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from pathlib import Path

import gevent  # noqa: F401  (imported before locust patches, as locust itself does)
from locust import events as locust_events
from locust.env import Environment

import psutil
import urllib3

from harness import signals
from harness.bounds import Bounds
from harness.endpoints import http_client as http
from harness.measure.levels import LEVEL_SLACK_S, cancelled, level_bound
from harness.measure.tally import LevelTally
from harness.workloads.schedules import arrival_offsets
from harness.engines.metrics_sampler import MetricsSampler
from harness.measure.sample import Sample
from harness.endpoints import KINDS

LOCUSTFILE = Path(__file__).resolve().parent / "locustfile.py"
urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)


def _load_user_module():
    from harness.load import users as user

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

    def __init__(self, on_progress, collected, budget: int | None, issued, t0: float) -> None:
        self.on_progress, self.collected, self.budget, self.issued = on_progress, collected, budget, issued
        self.t0 = self.last = t0

    def __call__(self) -> None:
        now = time.perf_counter()
        if self.on_progress is None or now - self.last < PROGRESS_EVERY_S:
            return
        self.last = now
        done = len(self.collected)  # a list of samples (the distributed master's) or a tally
        if isinstance(self.collected, LevelTally):
            tokens = self.collected.out_tokens
        else:
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


GC_EVERY_S = 2.0  # how often a level collects the cycles its young objects left


class _YoungCollector:
    """Collects the two young generations every ``GC_EVERY_S`` while the collector is off: only
    objects made since the last time are scanned (about a millisecond), so a long level keeps
    no garbage and no stream waits on a full collection."""

    def __init__(self) -> None:
        self.last = time.perf_counter()

    def __call__(self) -> None:
        now = time.perf_counter()
        if now - self.last >= GC_EVERY_S:
            gc.collect(1)
            self.last = time.perf_counter()


@dataclass
class LevelRun:
    samples: list[Sample]  # [] where the level kept none (its ``tally`` and ``spool`` hold them)
    wall_s: float
    client_cpu: float
    metrics: dict = field(default_factory=dict)
    telemetry: dict | None = None  # the level's telemetry summary (harness.load.sweep.run_level)
    # distributed levels (harness.load.distributed): each worker's part, which clock timed the
    # level's wall, and the line saying which worker was lost mid-level (None: none was)
    workers: list[dict] | None = None
    wall_clock: str | None = None
    lost: str | None = None
    readings: list = field(default_factory=list)  # the /metrics snapshots, each with its moment
    tally: LevelTally | None = None  # the level's figures, folded as its samples came
    spool: object | None = None  # harness.load.spill.LevelSpool: the samples' lines, on disk


def run_closed_level(
    root_url: str,
    workload_kwargs: dict,
    concurrency: int,
    count: int,
    timeout: float,
    metrics_url: str | None = None,
    on_progress=None,
    spool=None,
) -> LevelRun:
    """``concurrency`` users, each sending its next request when the last one ends, until
    ``count`` requests have finished (the level's budget). ``spool``: a
    ``harness.load.spill.LevelSpool`` that takes each sample as it finishes (none is kept)."""
    user = _load_user_module()
    workload = user.Workload(budget=count, **workload_kwargs)
    return _drive(
        root_url,
        user.ChatUser,
        workload,
        concurrency,
        count,
        timeout,
        metrics_url,
        on_progress=on_progress,
        spool=spool,
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
    spool=None,
) -> LevelRun:
    """Start ``users`` Locust users on ``workload``; stop when ``count`` samples are in, or, for a
    timed level, when the duration is over and every request already sent has finished.
    ``on_progress`` hears a ``Progress`` about twice a second while the level runs. Each sample
    goes to ``spool`` (``harness.load.spill.LevelSpool``) where one is given, else into a tally
    that keeps the samples too (the level's ``samples``)."""
    env = Environment(user_classes=[user_class], events=locust_events, host=root_url)
    env.harness_workload = workload
    env.harness_workload_external = True
    collector = spool if spool is not None else LevelTally(keep=True)
    collected = collector.tally if spool is not None else collector

    def listener(request_type, name, context=None, **_kw):
        if name in KINDS and context and "sample" in context:
            collector.add(context["sample"])

    env.events.request.add_listener(listener)
    headers = http.auth_headers(workload.api_key)  # an engine with a key guards /metrics too
    sampler = MetricsSampler(metrics_url, headers=headers) if metrics_url else None
    proc = psutil.Process()
    cpu0 = proc.cpu_times()
    runner = env.create_local_runner()
    if sampler:
        sampler.start()
    # A full garbage collection pauses every stream for milliseconds, so the collector waits
    # until the level ends (reference counting frees almost everything at once). Locust's
    # greenlets, sockets and tracebacks leave cycles, though: a long level collects its young
    # generation now and then (a few ms), and its memory stays flat (``make soak``).
    gc.collect()
    gc.disable()
    young = _YoungCollector()
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
                young()
            workload.budget = 0  # send nothing more; let what is in flight finish
            count = workload.issued
            bound_s = duration + timeout + LEVEL_SLACK_S
        if bound_s is None:
            bound_s = level_bound(count or 0, users, timeout)
        deadline = t0 + bound_s
        while len(collected) < count and time.perf_counter() < deadline:
            interrupts.wait(0.02)
            tell()
            young()
        interrupts.wait(0)
        for missing in cancelled(len(collected), count, workload.issued, bound_s, t0, time.perf_counter()):
            collector.add(missing)
    finally:
        interrupts.close()
        gc.enable()
        runner.stop()
        runner.quit()
        env.events.request.remove_listener(listener)
        if sampler:
            sampler.stop()
    wall = (collected.last_end - t0) if collected.last_end is not None else time.perf_counter() - t0
    cpu1 = proc.cpu_times()
    client_cpu = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / max(wall, 1e-9)
    summary, readings = (sampler.summary(), sampler.readings()) if sampler else ({}, [])
    run = LevelRun(collected.samples or [], wall, client_cpu, summary, readings=readings)
    run.tally, run.spool = collected, spool
    return run


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
    burstiness: float | None = None,
    offsets: list[float] | None = None,
    trace: list | None = None,
) -> LevelRun:
    """``count`` requests arriving at ``rate`` per second (open loop), each on its own greenlet:
    evenly, Poisson or gamma (``burstiness``) gaps, or at given ``offsets`` with the ``trace``'s
    requests (trace replay)."""
    user = _load_user_module()
    workload = user.Workload(budget=count, **workload_kwargs)
    if offsets is None:
        offsets = arrival_offsets(rate, count, poisson, seed, burstiness)
    workload.arrivals = offsets
    workload.trace = trace
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
    spool=None,
) -> LevelRun:
    """Closed loop for ``duration`` seconds; then no new requests, and the ones in flight finish.
    ``ramp_s`` spreads the users' first requests evenly over that many seconds (Locust itself
    starts a whole second's worth of users at once). ``spool``: as ``run_closed_level``'s."""
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
        spool=spool,
    )


def check_models(base_url: str, model: str, api_key: str | None, timeout: float = 10.0) -> list[str]:
    """The ids the server lists at /models ([] when it lists none or the route is missing); under
    the same two bounds as every request (TargetError, one line, when it breaks them)."""
    # Certificates are not verified, as by the load client: local endpoints often use self-signed ones.
    return http.model_ids(http.get_models(base_url, api_key, Bounds.of(timeout), verify=False))
