"""``harness sweep``: the closed-loop concurrency sweep, a drop-in for the lab's load-test.py.

Every option of the lab's script keeps its name and meaning; each level's record is validated
and appended to the notebook before the next level starts, and each request's exact sample goes
to a samples file beside it.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from urllib.parse import urlsplit

from harness import options
from harness.core.level_records import LevelContext, LevelRecord, ServerInfo
from harness.core.records import Objectives, is_level
from harness.errors import ConfigError, TargetError
from harness.io.input_files import load_prompt_file
from harness.io.progress import LevelProgress
from harness.io.notebook import check_writable, read_records
from harness.cli import sweep_workers, sweep_workloads
from harness.energy import meter as telemetry
from harness.cli.sweep_output import print_endpoint, print_level, print_plan
from harness.load import sweep as sweeping  # no Locust yet: harness.load.runner is imported when load runs
from harness.load.sweep import SweepPlan
from harness.options import OptionSet, load as load_options, ranges, workload
from harness.options.load import LOAD
from harness.options.record import RECORD
from harness.options.slo import SLO
from harness.options.telemetry import TELEMETRY_SET
from harness.options.workers import WORKERS
from harness.options.workload import WORKLOADS


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sweep",
        help="closed-loop concurrency sweep (drop-in for the lab's load-test.py)",
        description="Drive an OpenAI-compatible endpoint at each concurrency level and append one "
        "JSON line per level to the notebook.",
    )
    add_options(p)
    p.set_defaults(func=run)


def option_sets(levels: bool = True) -> tuple[OptionSet, ...]:
    """The sweep's option sets; without ``levels`` (``harness capacity`` chooses its own levels) no
    --concurrency, --rate, --duration, --repeat, --burstiness or trace."""
    if levels:
        return (LOAD, SLO, RECORD, WORKLOADS, WORKERS, TELEMETRY_SET)
    less_load, less_workload = LOAD.without(*load_options.LEVELS), WORKLOADS.without(*workload.LEVELS)
    return (less_load, SLO, RECORD, less_workload, WORKERS, TELEMETRY_SET)


def add_options(p, levels: bool = True, command: str = "sweep") -> None:
    """The sweep's options on ``p``, made from their declarations (``harness.options``)."""
    options.to_argparse(p, *option_sets(levels), command=command)


def parse_rates(text: str) -> list[float]:
    return ranges.check(load_options.RATE, text)


def parse_levels(text: str) -> list[int]:
    return ranges.check(load_options.CONCURRENCY, text)


def check_numbers(args) -> None:
    """Every option in its declared range, and one price at most (ConfigError, one line each)."""
    options.check(args, *option_sets(hasattr(args, "repeat")))


def _root(base_url: str) -> tuple[str, str]:
    try:
        parts = urlsplit(base_url)
        _ = parts.port  # a port that is no number raises here
    except ValueError as exc:
        raise ConfigError(f"--base-url {base_url!r} is not a usable URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--base-url must look like http://HOST:PORT/v1, got {base_url!r}")
    return f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/") or "/v1"


def plan_from(args) -> SweepPlan:
    """The checked options as a sweep plan (ConfigError, one line, for anything that does not fit)."""
    rates = parse_rates(args.rate) if args.rate else None
    levels = rates if rates else parse_levels(args.concurrency)
    check_numbers(args)
    if args.prompt_file:
        load_prompt_file(args.prompt_file, 1)  # a bad prompt file is one line before anything starts
    if args.duration is not None and rates:
        raise ConfigError(
            "--duration takes a positive number of seconds and works with --concurrency, not --rate"
        )
    if args.poisson and not rates:
        raise ConfigError("--poisson needs --rate")
    if args.timeout_per_user and rates:
        raise ConfigError("--timeout-per-user works with --concurrency (a closed loop), not --rate")
    sweep_workers.check(args, bool(rates))
    workload = sweep_workloads.workload_options(args, bool(rates))
    sweep_workloads.check_context(workload, args.max_tokens, args.context_length or None)
    if workload.get("trace"):
        levels = [1]  # the trace is replayed once: one level
    root, base_path = _root(args.base_url)
    server = ServerInfo(
        args.engine_version,
        args.host_desc,
        args.quant,
        args.context_length or None,
        args.server_slots or None,
    )
    context = LevelContext(
        label=args.label,
        engine=args.engine,
        model=args.model,
        base_url=args.base_url,
        prompt_set=sweep_workloads.prompt_set_name(args),
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        objectives=Objectives(args.slo_ttft, args.slo_tpot),
        server=server,
        endpoint=args.endpoint,
    )
    return SweepPlan(
        root=root,
        base_path=base_path,
        context=context,
        levels=levels,
        open_loop=bool(rates),
        requests=args.requests,
        min_rounds=args.min_rounds,
        timeout=args.timeout,
        timeout_per_user=args.timeout_per_user,
        prompt_file=args.prompt_file,
        warmup=args.warmup,
        api_key=os.environ.get(args.api_key_env) or None,
        api_key_env=args.api_key_env,
        labbook=args.labbook,
        samples_path=Path(args.samples) if args.samples else Path(args.labbook).with_suffix(".samples.jsonl"),
        poisson=args.poisson,
        duration=args.duration,
        seed=args.seed,
        processes=args.processes,
        worker_command=shlex.split(args.worker_command) if args.worker_command else None,
        master_host=args.master_host,
        expect_workers=args.expect_workers,
        master_port=sweep_workers.master_port(args),
        worker_wait_s=args.worker_wait,
        worker_url=args.worker_url,
        metrics_url=None if args.metrics_url == "none" else (args.metrics_url or root + "/metrics"),
        idle_timeout=args.idle_timeout or None,  # 0: no bound of its own (the total one)
        repeat=getattr(args, "repeat", 1),
        **workload,
        **telemetry.plan_options(args, root),
    )


def label_warning(labbook: str, label: str) -> str | None:
    """The warning for a sweep into a label that already has levels in the notebook, or None."""
    if not Path(labbook).is_file():
        return None
    levels = [r for r in read_records(labbook, "level", select=is_level).records if r.get("label") == label]
    if not levels:
        return None
    crowds = ", ".join(str(r["concurrency"]) for r in levels)
    return (
        f"label {label!r} already has {len(levels)} level(s) in {labbook} (c = {crowds}); this run's "
        "levels are added to them and summarise shows both runs' rows; pass --append to mean it, "
        "or give a new --label"
    )


def refuse_plain_http(plan: SweepPlan) -> None:
    """An https URL to a plain-HTTP port, said at once (TargetError) instead of at the bound."""
    from harness.load import runner  # noqa: F401  (Locust patches ssl: it must come before ssl is imported)
    from harness.io import endpoint_proof

    mismatch = endpoint_proof.plain_http_behind_https(plan.root + plan.base_path)
    if mismatch:
        raise TargetError(mismatch)


def run(args) -> int:
    plan = plan_from(args)
    check_writable(plan.labbook)  # before the first level, not after it (it would be lost)
    warning = None if args.append else label_warning(plan.labbook, args.label)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    check_writable(plan.samples_path, "--samples")
    refuse_plain_http(plan)
    listed = sweeping.list_models(plan)
    if listed and args.model not in listed:
        print(
            f"warning: the server lists {', '.join(map(str, listed))}, not {args.model!r}; requests may fail",
            file=sys.stderr,
        )
    print_plan(args, plan)
    if not args.no_endpoint_check:
        print_endpoint(sweeping.prove_endpoint(plan, listed))
    meter = telemetry.start(plan.telemetry)  # absent sources in one line each; the idle baseline
    try:
        return _measure(args, plan, meter)
    finally:
        if meter is not None:
            meter.close()


def _measure(args, plan: SweepPlan, meter) -> int:
    """Every level, each printed as it lands; the exit status."""
    written: list[dict] = []
    started: list[bool] = []

    def on_ready() -> None:
        started.append(True)
        if plan.processes:
            print(f"    load from {plan.processes} Locust worker process(es)", flush=True)
        if plan.expect_workers:
            print(f"    load from {plan.expect_workers} Locust worker(s) on other hosts", flush=True)

    progress = LevelProgress()

    def on_level(record: LevelRecord) -> None:
        progress.end()
        written.append(record.to_dict())
        print_level(written[-1], written[-2] if len(written) > 1 else None)
        for line in sweep_workers.worker_lines(written[-1]):
            print(line, flush=True)

    if plan.expect_workers:
        print(sweep_workers.waiting_line(plan), flush=True)
    try:
        sweeping.run_levels(plan, on_level, on_ready, on_progress=progress.update, meter=meter)
    except KeyboardInterrupt:
        progress.end()
        if not started:  # during the warm-up: the command's own one line, as for any other command
            raise
        print(f"\n    interrupted: {len(written)} finished level(s) are in {args.labbook}", file=sys.stderr)
        return 130
    print(f"    appended {len(written)} line(s) to {args.labbook}; samples in {plan.samples_path}")
    if any(r["completed"] == 0 for r in written):
        print("    at least one level completed no request; see its first error above", file=sys.stderr)
        return 1
    return 0
