"""The closed- or open-loop sweep over levels, as a library: it measures, records and returns
results, and never prints (``harness.cli.sweep`` parses the options and renders what comes back).

Each level's record is validated and appended to the notebook before the next level starts, and
each request's exact sample goes to a samples file beside it, so an interrupted sweep keeps every
finished level. Locust is imported (through ``harness.load.runner``) only when load runs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness import options, signals
from harness.bounds import crowd_timeout
from harness.measure.levels import level_record, peak_in_flight, sample_record
from harness.workloads.prompts import make_prompts
from harness.workloads.traces import TracePlan
from harness.workloads.level_part import tally_workload_stats, workload_stats
from harness.workloads.conversations import ConversationPlan
from harness.workloads.request import LengthPlan, largest_output, largest_request
from harness.records.level import Arrival, LevelContext, LevelRecord, RunMark
from harness.records.base import EndpointCheck, ProofSeen
from harness.endpoints import api_path, kind_named
from harness.errors import EngineError, HarnessError, TargetError, TargetUnreachable
from harness.records.clock import new_run_id, now_stamp
from harness.records.sample import SAMPLE
from harness.workloads.files import load_prompt_file
from harness.records.notebook import append_level, append_record
from harness.energy.meter import Meter, TelemetryPlan, with_parts
from harness.exporter.live import LIVE
from harness.exporter.series import series_part
from harness.options import load as load_options

WARMUP_PROMPT = "Answer with a single word: ok"


@dataclass(frozen=True)
class SweepPlan:
    """Everything one sweep needs, already checked: where, what to send, which levels, where to write."""

    root: str  # scheme://host:port of the endpoint
    base_path: str  # the API path before the endpoint kind's own (/chat/completions), usually /v1
    context: LevelContext  # what each level record says of the run (label, engine, objectives, ...)
    levels: list[float]  # concurrencies, or arrival rates when ``open_loop``
    open_loop: bool
    requests: int
    min_rounds: int
    timeout: float
    prompt_file: str | None
    warmup: int
    api_key: str | None
    api_key_env: str
    labbook: str
    samples_path: Path
    poisson: bool = False
    duration: float | None = None
    seed: int = 1
    processes: int = 0
    metrics_url: str | None = None
    idle_timeout: float | None = None  # seconds without a byte (None: the request's whole bound)
    timeout_per_user: float = 0.0  # closed loop: the bound at c users is max(timeout, c x this)
    worker_command: list[str] | None = None  # start each worker with this (a container), not locally
    master_host: str = "127.0.0.1"
    expect_workers: int = 0  # workers on other hosts (harness worker) the master waits for, not local ones
    master_port: int = 0  # the master's port (0: one the system picks; --expect-workers: Locust's 5557)
    worker_wait_s: float = 300.0  # how long the master waits for the --expect-workers to connect
    worker_url: str | None = None  # the server's root as the workers reach it (default: root)
    repeat: int = 1  # runs of each level, one after another, each its own record
    burstiness: float | None = None  # open loop: gamma gaps of this shape (harness.workloads.schedules)
    lengths: LengthPlan | None = None  # drawn input and output lengths (harness.workloads.request)
    conversations: ConversationPlan | None = None  # --workload conversations
    trace: TracePlan | None = None  # --trace FILE: requests at their timestamps
    prompts: tuple[str, ...] = ()  # --sharegpt with prompts: each conversation's first user message
    run_id: str = field(default_factory=new_run_id)  # marks every level this sweep writes
    telemetry: TelemetryPlan | None = None  # --telemetry (None: no energy part in the records)
    price_per_hour: float | None = None  # --price-per-hour: cost per million output tokens
    price_per_kwh: float | None = None  # --price-per-kwh

    @property
    def base_url(self) -> str:
        return self.context.base_url

    @property
    def model(self) -> str:
        return self.context.model

    @property
    def workload_kind(self) -> str:
        if self.conversations:
            return "agent" if self.conversations.agent else "conversations"
        return "trace" if self.trace else "prompts"

    def workload_params(self) -> dict:
        """The workload's parameters as the record states them."""
        if self.trace:
            return self.trace.params()
        if self.conversations:
            return self.conversations.params()
        return self.lengths.params() if self.lengths else {}


def list_models(plan: SweepPlan) -> list[str]:
    """The models the endpoint lists; TargetUnreachable (one line, no traceback) when nothing answers."""
    from harness.load import runner as loadgen  # imports Locust, which patches the standard library: only now

    try:
        return loadgen.check_models(
            plan.root + plan.base_path, plan.model, plan.api_key, timeout=min(plan.timeout, 10.0)
        )
    except HarnessError:  # the server's answer, or a key no header carries
        raise
    except Exception as exc:  # DNS, TLS
        raise TargetUnreachable(
            f"nothing answers at {plan.base_url} ({type(exc).__name__}); start the server or fix --base-url"
        ) from exc


def prompts_for(plan: SweepPlan, count: int) -> list:
    """``count`` prompts (at least 64) from the prompt file or the built-in set."""
    if plan.prompts:
        return [plan.prompts[i % len(plan.prompts)] for i in range(max(count, 64))]
    if plan.prompt_file:
        return load_prompt_file(plan.prompt_file, max(count, 64))
    return make_prompts(plan.context.prompt_set, max(count, 64))


def prove_endpoint(plan: SweepPlan, listed: list[str]) -> EndpointCheck:
    """One request before the first level; what it saw goes into the notebook either way, and a
    broken endpoint raises TargetError after the record is written."""
    from harness.endpoints import proof as endpoint_proof

    seen = endpoint_proof.observe(  # the load's own URL (root + base path), headers and bounds
        plan.root + plan.base_path,
        plan.model,
        listed,
        plan.api_key,
        timeout=plan.timeout,
        idle_timeout=plan.idle_timeout,
        endpoint=plan.context.endpoint,
    )
    longest = max(endpoint_proof.estimate_tokens(p) for p in prompts_for(plan, 64))
    try:
        most = largest_output(plan.context.max_tokens, plan.lengths, plan.conversations)
        warnings, failure = endpoint_proof.verdict(seen, longest, most), None
    except TargetError as exc:
        warnings, failure = [], exc
    need = largest_request(plan.context.max_tokens, plan.lengths, plan.conversations, plan.trace)
    proof = ProofSeen.read(seen)
    if failure is None and proof.n_ctx and need and need > proof.n_ctx:
        failure = TargetError(
            f"the server's context is {proof.n_ctx} tokens per sequence, and the workload asks up to "
            f"{need} tokens a request (prompt and output); shorten its lengths or give the server more "
            "context"
        )
    check = EndpointCheck(
        plan.context.label, plan.base_url, plan.model, proof, longest, now_stamp(), warnings
    )
    append_record(plan.labbook, check.to_dict(), EndpointCheck.KIND)
    if failure:
        raise failure
    return check


def _workload(plan: SweepPlan, timeout: float | None = None) -> dict:
    c = plan.context
    return {
        "path": api_path(plan.base_path, kind_named(c.endpoint)),
        "endpoint": c.endpoint,
        "model": c.model,
        "max_tokens": c.max_tokens,
        "temperature": c.temperature,
        "api_key": plan.api_key,
        "timeout": timeout or plan.timeout,
        "idle_timeout": plan.idle_timeout,
        "lengths": plan.lengths,
        "conversations": plan.conversations,
        "seed": plan.seed,
    }


def warm_up(plan: SweepPlan) -> None:
    """The discarded short requests before the first level (none when ``warmup`` is 0)."""
    from harness.load import runner as loadgen

    if plan.warmup > 0:
        warmup = {**_workload(plan), "prompts": [WARMUP_PROMPT], "max_tokens": 8}
        warmup.update(lengths=None, conversations=None)  # one short plain request, whatever the workload
        loadgen.run_closed_level(plan.root, warmup, 1, plan.warmup, plan.timeout)


def worker_timeout(plan: SweepPlan) -> float:
    """Every request's total bound in a ``processes`` sweep: the largest level's (workers start once)."""
    return max(crowd_timeout(plan.timeout, plan.timeout_per_user, int(c)) for c in plan.levels)


def start_workers(plan: SweepPlan):
    """The Locust worker processes (and the master here) of a ``processes`` sweep."""
    from harness.load import distributed  # imports Locust: only now

    worker_args = options.to_argv(  # the workers' users run under the sweep's two bounds too
        {
            "model": plan.model,
            "max_tokens": plan.context.max_tokens,
            "temperature": plan.context.temperature,
            "prompt_set": plan.context.prompt_set,
            "api_base_path": plan.base_path,
            "api_key_env": plan.api_key_env,
            "timeout": worker_timeout(plan),
            "idle_timeout": plan.idle_timeout,
            "endpoint": plan.context.endpoint,
        },
        load_options.LOCUST,
    )
    if plan.expect_workers:
        url = plan.worker_url or plan.root
        remote = distributed.RemoteWorkers(
            plan.expect_workers, plan.master_host, plan.master_port, url, plan.worker_wait_s
        )
        return distributed.DistributedLoad(plan.root, 0, worker_args, remote=remote)
    if plan.worker_command:
        return distributed.DistributedLoad(
            plan.root,
            plan.processes,
            worker_args,
            connect_timeout=180.0,  # containers take seconds each to start on a busy machine
            launch=distributed.WorkerLaunch(
                plan.worker_command, plan.master_host, plan.worker_url or plan.root
            ),
        )
    return distributed.DistributedLoad(plan.root, plan.processes, worker_args)


def run_level(
    plan: SweepPlan,
    level: float,
    distributed=None,
    on_progress=None,
    meter: Meter | None = None,
    repeat: int | None = None,
):
    """One level: (what the runner measured, the concurrency it counts as, how requests arrived).
    ``on_progress`` hears the runner's ``Progress`` about twice a second while the level runs;
    ``meter``'s sampler reads the telemetry from just before the level to just after it (on its
    own thread), and its summary is the result's ``telemetry``. ``repeat`` (which run of the level
    this is): keep no samples where the level allows, only their lines on disk and their figures
    (``spooled``); without it, the result's ``samples`` are all there. The live collector
    (``harness.exporter.live``), where served, counts the level's requests and shows its level."""
    if plan.trace or plan.open_loop:
        LIVE.start_level(rate=plan.trace.rate() if plan.trace else level)
    else:
        LIVE.start_level(users=level)
    spool = spooled(plan, level, distributed, repeat)
    try:
        if meter is None:
            result, concurrency, arrival = _run_level(plan, level, distributed, on_progress, spool)
        else:
            meter.start()
            try:
                result, concurrency, arrival = _run_level(plan, level, distributed, on_progress, spool)
            finally:
                summary = meter.stop()
            result.telemetry = summary
    except BaseException:
        if spool is not None:  # an interrupted level: its spool is no one's
            spool.close()
        raise
    LIVE.settle(result.samples)  # those cancelled at the bound, which no event brought
    return result, concurrency, arrival


def in_flight(plan: SweepPlan):
    """How the live collector reads the requests in flight: this process's users' count, or None
    where worker processes send the requests (they do not say)."""
    if plan.processes or plan.expect_workers:
        return None

    def count() -> int:
        from harness.load import users as user  # imported by the runner already: Locust is loaded

        return user.IN_FLIGHT[0]

    return count


def spooled(plan: SweepPlan, level: float, distributed, repeat: int | None):
    """A ``LevelSpool`` for a closed loop of single requests in this process (its figures need
    no sample kept, so its memory stays flat however long it runs), else None. Not while the live
    collector serves: it settles the level's count from the level's samples."""
    if repeat is None or distributed or plan.open_loop or plan.trace or plan.workload_kind != "prompts":
        return None
    if LIVE.serving:
        return None
    from harness.load.spill import LevelSpool

    mark = {SAMPLE.run_id: plan.run_id, SAMPLE.repeat: repeat}
    return LevelSpool(plan.context.label, level, mark, plan.samples_path.parent)


def _run_level(plan: SweepPlan, level: float, distributed=None, on_progress=None, spool=None):
    from harness.load import runner as loadgen

    count = plan.requests if plan.open_loop else max(plan.requests, plan.min_rounds * int(level))
    timeout = (
        plan.timeout if plan.open_loop else crowd_timeout(plan.timeout, plan.timeout_per_user, int(level))
    )
    if distributed:
        timeout = worker_timeout(plan)
    workload = {**_workload(plan, timeout), "prompts": prompts_for(plan, count)}
    if plan.trace:
        offsets, jobs = plan.trace.schedule()
        result = loadgen.run_open_level(
            plan.root,
            workload,
            level,
            len(jobs),
            False,
            plan.timeout,
            metrics_url=plan.metrics_url,
            on_progress=on_progress,
            offsets=offsets,
            trace=jobs,
        )
        arrival = Arrival("trace", rate_rps=round(plan.trace.rate(), 3))
        return result, max(1, peak_in_flight(result.samples)), arrival
    if plan.open_loop:
        result = loadgen.run_open_level(
            plan.root,
            workload,
            level,
            count,
            plan.poisson,
            plan.timeout,
            metrics_url=plan.metrics_url,
            seed=plan.seed,
            on_progress=on_progress,
            burstiness=plan.burstiness,
        )
        kind = "gamma" if plan.burstiness is not None else "poisson" if plan.poisson else "fixed-rate"
        arrival = Arrival(kind, rate_rps=level, burstiness=plan.burstiness)
        return result, max(1, peak_in_flight(result.samples)), arrival
    if plan.duration:
        result = loadgen.run_timed_level(
            plan.root,
            workload,
            level,
            plan.duration,
            timeout,
            metrics_url=plan.metrics_url,
            on_progress=on_progress,
            spool=spool,
        )
        return result, level, Arrival(duration_s=plan.duration)
    if distributed:
        result = distributed.level(
            level, count, timeout, metrics_url=plan.metrics_url, on_progress=on_progress
        )
        arrival = Arrival(
            processes=plan.processes or plan.expect_workers,
            workers=result.workers,
            wall_clock=result.wall_clock,
        )
        return result, level, arrival
    result = loadgen.run_closed_level(
        plan.root,
        workload,
        level,
        count,
        timeout,
        metrics_url=plan.metrics_url,
        on_progress=on_progress,
        spool=spool,
    )
    return result, level, Arrival()


def record_level(
    plan: SweepPlan,
    result,
    concurrency: int,
    arrival: Arrival,
    run: RunMark | None = None,
    meter: Meter | None = None,
) -> LevelRecord:
    """Build, validate and append the level's record, then its exact samples beside the notebook
    (``run``: which run of the level this is; the sweep's run id, once, by default; ``meter``: the
    sweep's telemetry, whose figures go into the record's ``energy``). A spooled level's figures
    come from its tally and its lines from its spool (``harness.load.spill``)."""
    spool = getattr(result, "spool", None)
    try:
        return _record_level(plan, result, concurrency, arrival, run, meter, spool)
    finally:
        if spool is not None:
            spool.close()


def _record_level(plan, result, concurrency, arrival, run, meter, spool) -> LevelRecord:
    tally = spool.tally if spool is not None else result.samples
    open_loop = plan.open_loop or bool(plan.trace)
    if spool is not None:
        workload = tally_workload_stats(spool.tally, plan.workload_kind, plan.workload_params(), open_loop)
    else:
        workload = workload_stats(result.samples, plan.workload_kind, plan.workload_params(), open_loop)
    record = level_record(
        tally,
        concurrency,
        result.wall_s,
        plan.context,
        now_stamp(),
        arrival,
        client_cpu=result.client_cpu,
        server_metrics=result.metrics or None,
        run=run or RunMark(plan.run_id),
        workload=workload,
    )
    record = with_parts(
        record, meter, getattr(result, "telemetry", None), plan.price_per_hour, plan.price_per_kwh
    )
    timeline = spool.tally if spool is not None else result.samples
    series = series_part(getattr(result, "readings", None) or [], timeline)
    if series is not None:
        record = dataclasses.replace(record, series=series)
    if spool is not None:  # the lines written as the samples came, copied in pieces
        append_level(plan.labbook, record.to_dict(), plan.samples_path, spool.pieces())
        return record
    mark = {SAMPLE.run_id: plan.run_id, SAMPLE.repeat: (run or RunMark(plan.run_id)).repeat}
    rows = [{**sample_record(s, plan.context.label, concurrency), **mark} for s in result.samples]
    append_level(plan.labbook, record.to_dict(), plan.samples_path, rows)  # both whole, or neither
    return record


def run_levels(
    plan: SweepPlan,
    on_level: Callable[[LevelRecord], None] = lambda r: None,
    on_ready: Callable[[], None] = lambda: None,
    on_progress: Callable[[float, object], None] | None = None,
    meter: Meter | None = None,
) -> list[LevelRecord]:
    """Read the idle baseline (with a ``meter``), warm up, start the worker processes if any, then
    run every level in order (each ``plan.repeat`` times in a row). ``on_ready``
    hears when the first level is about to start, ``on_level`` of each record once it is on disk
    (an interrupt, which propagates, keeps those), ``on_progress`` (level, ``Progress``) about
    twice a second inside each level."""
    if meter is not None:
        meter.baseline()  # before the warm-up: nothing of the load has run yet
    warm_up(plan)
    distributed = start_workers(plan) if plan.processes or plan.expect_workers else None
    on_ready()
    records: list[LevelRecord] = []
    try:
        for level in plan.levels:
            signals.raise_if_received()  # a signal that came while the last level stopped ends it here
            told = (lambda p, level=level: on_progress(level, p)) if on_progress else None
            for i in range(1, plan.repeat + 1):
                result, concurrency, arrival = run_level(plan, level, distributed, told, meter, repeat=i)
                mark = RunMark(plan.run_id, i, plan.repeat)
                records.append(record_level(plan, result, concurrency, arrival, mark, meter))
                on_level(records[-1])
                if getattr(result, "lost", None):  # a worker lost mid-level: that level is recorded; stop
                    raise EngineError(result.lost)
    finally:
        if distributed:
            distributed.close()
    return records
