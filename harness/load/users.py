"""A Locust user that streams chat completions and measures each request exactly.

One class, three uses:

* web UI:   ``locust -f locustfiles/llm_user.py --host http://127.0.0.1:8099 --web-host 127.0.0.1``
* headless: ``locust -f locustfiles/llm_user.py --headless -u 8 -r 8 -t 30s --stop-timeout 60
            --host ... --ttft-p95-max 1.0 --fail-ratio-max 0.01`` (exit 1 when a threshold fails)
* library:  ``harness.load.runner`` runs it level by level for ``harness sweep``.

Each request fires Locust's ``request`` event three times: ``chat`` (whole request, end of
stream), and the ``METRIC`` rows ``TTFT`` and ``TPOT`` for the live view. The exact sample (every
token's arrival on ``time.perf_counter()``) rides in ``context["sample"]``; reported percentiles
come from those samples, never from Locust's rounded buckets. Requests go out on the user's own
connections (``harness.load.socket_client``), not FastHttp's: the TTFT runs from the moment the
request left, and every read, the headers' included, is stamped by the kernel on arrival.
"""

from __future__ import annotations

import os
import sys
import time

import gevent
from locust import User, constant, events, task

from harness.workloads.prompts import make_prompts
from harness.measure.sample import Sample
from harness.records.sample import SAMPLE
from harness.workloads.request import Request
from harness.load.socket_client import Pool
from harness.energy.meter import LOCUST_RUN
from harness.exporter import live
from harness.load import headless, worker as sweep_worker
from harness.endpoints import urls
from harness.load import locust_options as options  # noqa: F401  (registers the Locust command-line options)
from harness.load.request import Departure, stream_once
from harness.load.workload import Workload  # noqa: F401  (re-exported: the runner builds user.Workload)
from harness.endpoints import KINDS
from harness.errors import ConfigError


def _metric_rows(environment, sample: Sample) -> None:
    if not sample.ok:
        return
    for name, value in (("TTFT", sample.ttft), ("TPOT", sample.tpot)):
        if value is not None:
            environment.events.request.fire(
                request_type="METRIC",
                name=name,
                response_time=value * 1000,
                response_length=0,
                exception=None,
                context={},
                url=None,
                response=None,
                start_time=time.time(),
            )


class _BoundedUser(User):
    """A user with its own pool of keep-alive connections to the host (``harness.load.socket_client``:
    both ends of every request timed exactly); connecting waits at most 10 s or the idle bound."""

    abstract = True
    connection_timeout = 10.0

    def __init__(self, environment) -> None:
        super().__init__(environment)
        bounds = workload_for(environment)
        self.pool = Pool(self.host or "", min(self.connection_timeout, bounds.idle_timeout))

    def on_stop(self) -> None:
        self.pool.close()


class ChatUser(_BoundedUser):
    """Closed loop: send, read the whole stream, send the next."""

    wait_time = constant(0)

    def on_start(self) -> None:
        self.workload: Workload = workload_for(self.environment)
        delay = self.workload.start_delay()
        if delay:
            gevent.sleep(delay)

    @task
    def chat(self) -> None:
        if self.workload.conversations is not None:
            self.converse()
            return
        job = self.workload.take()
        if job is None:  # budget spent: wait for the runner to end the level
            self.wait_idle()
            return
        self.send(job)

    def send(self, job: Request) -> Sample:
        IN_FLIGHT[0] += 1
        try:
            sample = stream_once(self.pool, self.workload, job)
        finally:
            IN_FLIGHT[0] -= 1
        _metric_rows(self.environment, sample)
        return sample

    def converse(self) -> None:
        """One turn of this user's conversation (a new conversation when the last one is over):
        the whole history plus a new message, the answer added to the history, then the think
        time before the next turn."""
        conversation = getattr(self, "conversation", None)
        job = conversation.next_request() if conversation else None
        if job is None:
            self.conversation = conversation = self.workload.new_conversation()
            job = conversation.next_request()
        if job is None or not self.workload.spend():
            self.wait_idle()
            return
        sample = self.send(job)
        conversation.take_answer(sample)
        sample.text = ""  # the history holds what it keeps of it; the level's samples need none
        think = self.workload.conversations.think_s if self.workload.conversations else 0.0
        if think and conversation.turn < conversation.turns:
            gevent.sleep(think)

    def wait_idle(self) -> None:
        import gevent

        gevent.sleep(0.05)


class ArrivalUser(_BoundedUser):
    """Open loop: one user sends each request at its scheduled arrival time and reads it on a
    greenlet of its own, whatever the server's speed, so offered load does not fall when the
    server slows (``harness.load.departures``: the scheduler and how it keeps the time)."""

    wait_time = constant(0)
    fixed_count = 1
    abstract = True  # not offered in the web UI or headless runs; the sweep's open loop uses it

    def on_start(self) -> None:
        self.workload = workload_for(self.environment)
        self.done = False

    @task
    def dispatch(self) -> None:
        from harness.load.departures import Spares, send_on_schedule

        if self.done or not self.workload.arrivals:
            gevent.sleep(0.05)
            return
        spares = Spares(self.pool)

        def ready(job: Request) -> Departure:
            departure = Departure(self.pool, self.workload, job)
            spares.top_up()  # the next request's connection opened while this one waits
            return departure

        try:
            gevent.joinall(send_on_schedule(self.workload, self.workload.arrivals, ready, self._one))
        finally:
            spares.close()
        self.done = True

    def _one(self, departed: Departure) -> None:
        IN_FLIGHT[0] += 1
        try:
            sample = stream_once(self.pool, self.workload, departed.job, departed)
        finally:
            IN_FLIGHT[0] -= 1
        _metric_rows(self.environment, sample)


# -- standalone use (web UI, headless): options and thresholds ---------------------------------------


SAMPLES: list[Sample] = []  # the current test's exact samples (cleared on test start and on reset)
IN_FLIGHT = [0]  # chat requests of this process in flight now
SWEEP_WORKER_ENV = "HARNESS_SWEEP_WORKER"  # set by harness sweep --processes for its workers
RUN_WINDOW: dict[str, float] = {}


def workload_for(environment) -> Workload:
    existing = getattr(environment, "harness_workload", None)
    if existing is not None:
        return existing
    o = environment.parsed_options
    endpoint = getattr(o, "endpoint", None)  # the kind of request (harness.endpoints)
    path = urls.chat_path(environment.host or "", o.api_base_path, endpoint)  # --host with or without /v1
    wl = Workload(
        path,
        o.model or None,
        make_prompts(o.prompt_set, 256),
        o.max_tokens,
        temperature=o.temperature,
        api_key=os.environ.get(o.api_key_env) or None,
        timeout=o.timeout,
        idle_timeout=o.idle_timeout or None,
        endpoint=endpoint,
        **standalone_workload(o),
    )
    if _is_worker(environment) and os.environ.get(SWEEP_WORKER_ENV):
        wl.budget = 0  # a sweep's worker waits for the master to hand it a share of the level
    environment.harness_workload = wl
    return wl


def standalone_workload(o) -> dict:
    """The workload options of a headless or web-UI run as Workload arguments (checked already
    by their option types: ``harness.load.locust_options``)."""
    from harness.workloads import specs

    kind = getattr(o, "workload", "prompts")
    if kind in ("conversations", "agent"):
        plan = specs.conversation_plan(
            o.turns, o.message_tokens, o.think_time, o.output_tokens or None, agent=kind == "agent"
        )
        return {"conversations": plan}
    return {"lengths": specs.length_plan(o.input_tokens or None, o.output_tokens or None)}


def _is_worker(environment) -> bool:
    from locust.runners import WorkerRunner

    return isinstance(environment.runner, WorkerRunner)


@events.init.add_listener
def _master_collects(environment, **_kw) -> None:
    """As the master of distributed Locust (``--master``, the compose services): the workers send
    every exact sample here, so the master's summary, thresholds and records cover all of them."""
    from locust.runners import MasterRunner

    if isinstance(environment.runner, MasterRunner):

        def take(environment, msg, **_) -> None:
            got = [Sample(**d) for d in msg.data]
            SAMPLES.extend(got)
            live.LIVE.settle(got)  # the live figures of a distributed run: the master's

        environment.runner.register_message("harness_samples", take)


def _new_window() -> None:
    """A new test, or the same test's statistics reset: forget every sample taken so far."""
    SAMPLES.clear()
    RUN_WINDOW.clear()
    RUN_WINDOW["start"] = time.perf_counter()


@events.init.add_listener
def _prove_endpoint(environment, **_kw) -> None:
    """Headless: the endpoint proof before any user starts (harness.load.headless)."""
    o = getattr(environment, "parsed_options", None)
    if o is not None:
        LOCUST_RUN.check(environment)  # both prices: one line, exit 2
        headless.prove_or_exit(environment, os.environ.get(o.api_key_env) or None)
        LOCUST_RUN.open_for(environment)  # the telemetry's sources and idle baseline, before any test
        _serve_figures(environment, o)


def _serve_figures(environment, o) -> None:
    """``--prometheus-port``: the live figures served by this process where it runs the users or
    collects their samples (a worker serves nothing); a port taken is one line and exit status 2."""
    port = getattr(o, "prometheus_port", None)
    if not port or getattr(environment, "harness_workload_external", False) or getattr(o, "worker", False):
        return
    counter = None if getattr(o, "master", False) else (lambda: IN_FLIGHT[0])
    try:
        live.start(port, o.prometheus_host, counter, lead="harness: ")
    except ConfigError as exc:
        print(f"harness: {exc}; no load was sent", file=sys.stderr)
        raise SystemExit(2) from None


@events.spawning_complete.add_listener
def _level(user_count, **_kw) -> None:
    if live.LIVE.rate is None:  # a sweep's open loop spawns one user: its level is the rate
        live.LIVE.users = user_count  # the web UI's new user count, or the headless run's


events.request.add_listener(live.LIVE.on_request)  # counts only where served, while a level runs


@events.test_start.add_listener
def _started(environment, **_kw) -> None:
    LOCUST_RUN.test_started(environment)  # the idle baseline, where read here, before the window
    if not getattr(environment, "harness_workload_external", False):  # a sweep says its own levels
        live.LIVE.start_level(users=getattr(environment.runner, "target_user_count", None) or 0)
    _new_window()


@events.reset_stats.add_listener
def _reset(**_kw) -> None:
    LOCUST_RUN.reset()
    _new_window()


@events.test_stop.add_listener
def _stopped(environment, **_kw) -> None:
    RUN_WINDOW["stop"] = time.perf_counter()
    LOCUST_RUN.test_stopped()
    o = getattr(environment, "parsed_options", None)
    # the web UI writes one record per phase of the test (a change of user count starts one: the
    # web UI's phases), against its host; headless, one at quitting
    if environment.web_ui is not None and o is not None and getattr(o, "labbook", "") and SAMPLES:
        _write_record(environment, o, getattr(environment, "harness_phases", None) or [])


@events.init.add_listener
def _sweep_worker(environment, **_kw) -> None:
    """As a worker: send every exact sample to the master (``harness.load.worker``). A
    worker of ``harness sweep --processes`` or ``--expect-workers`` also takes its share of each
    level's requests from the master (users wait until it comes); a plain worker sends requests
    until the master stops it."""
    if _is_worker(environment):
        sweep_worker.attach(environment, workload_for)


@events.request.add_listener
def _collect(request_type, name, context=None, **_kw) -> None:
    if name in KINDS and context and "sample" in context and getattr(_collect, "enabled", True):
        sample = context["sample"]
        if sample.t_send >= RUN_WINDOW.get("start", float("-inf")):  # sent before a reset: not this test's
            SAMPLES.append(sample)


@events.quitting.add_listener
def _thresholds(environment, **_kw) -> None:
    o = getattr(environment, "parsed_options", None)
    if o is None or getattr(environment, "harness_workload_external", False):
        return
    samples = list(SAMPLES)
    problems = headless.threshold_problems(samples, o.ttft_p95_max, o.fail_ratio_max)
    wall = RUN_WINDOW.get("stop", time.perf_counter()) - RUN_WINDOW.get("start", time.perf_counter())
    users = max(getattr(environment.runner, "target_user_count", 0) or 0, 1)
    print(headless.summary_table(samples, wall, users))
    if getattr(o, "labbook", "") and SAMPLES and not _is_worker(environment) and environment.web_ui is None:
        _write_record(environment, o)
    elif not _is_worker(environment) and environment.web_ui is None:  # no record: the figures said here
        for line in LOCUST_RUN.run_lines(environment, samples, wall):
            print(f"harness: {line}")
    LOCUST_RUN.close()
    live.LIVE.close(getattr(o, "prometheus_hold", 0.0) or 0.0)
    if problems:
        print("harness thresholds FAILED: " + "; ".join(problems))
        environment.process_exit_code = 1
    elif o.ttft_p95_max > 0 or o.fail_ratio_max >= 0:
        print("harness thresholds passed")


def _write_record(environment, o, phases: list[dict] | None = None) -> None:
    """One level record (the seed's fields) for the whole headless run, or for each phase of a web
    UI test whose user count changed (``phases``: harness.load.live's), from the exact samples,
    built by the sweep's own builder under the shared default objectives: a level's figures are
    those of one user count, never two blended."""
    from harness.measure.levels import level_record, sample_record
    from harness.load.live import phase_spans
    from harness.records.level import LevelContext
    from harness.records.base import DEFAULT_OBJECTIVES, UNKNOWN
    from harness.records.clock import new_run_id, now_stamp
    from harness.records.level import RunMark
    from harness.workloads.level_part import workload_stats
    from harness.records.notebook import append_level

    stop = RUN_WINDOW.get("stop", time.perf_counter())
    if phases and len(phases) > 1:
        spans = phase_spans(phases, list(SAMPLES), stop)
    else:
        users = max(getattr(environment.runner, "target_user_count", 0) or 0, 1)
        spans = [(users, list(SAMPLES), stop - RUN_WINDOW.get("start", stop))]
    context = LevelContext(
        label=o.label,
        engine=UNKNOWN,
        model=o.model or "",
        base_url=environment.host or "",
        prompt_set=o.prompt_set,
        max_tokens=o.max_tokens,
        temperature=o.temperature,
        objectives=DEFAULT_OBJECTIVES,
        endpoint=getattr(o, "endpoint", None) or "chat",
    )
    wl = workload_for(environment)
    kind = ("agent" if wl.conversations.agent else "conversations") if wl.conversations else "prompts"
    params = wl.conversations.params() if wl.conversations else wl.lengths.params() if wl.lengths else {}
    samples_path = os.path.splitext(o.labbook)[0] + ".samples.jsonl"
    base = new_run_id()  # its samples name it too: a level cut before its record is told apart
    for n, (users, samples, wall) in enumerate(spans):
        if not samples:
            continue
        users = max(users, 1)
        run = RunMark(base if len(spans) == 1 else f"{base}-phase{n + 1}")  # a phase is its own run
        stats = workload_stats(samples, kind, params, open_loop=False)
        record = level_record(samples, users, max(wall, 1e-6), context, now_stamp(), run=run, workload=stats)
        record = LOCUST_RUN.with_energy(environment, record, n, len(spans))
        rows = [
            {**sample_record(s, o.label, users), SAMPLE.run_id: run.run_id, SAMPLE.repeat: 1} for s in samples
        ]
        append_level(o.labbook, record.to_dict(), samples_path, rows)  # both whole, or neither
        print(
            f"harness: appended a level record for {o.label} at {users} user(s) "
            f"({len(samples)} exact samples) to {o.labbook}"
        )
        for line in LOCUST_RUN.lines(record):
            print(f"harness: {line}")
