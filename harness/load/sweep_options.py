"""``harness sweep``'s options read into a ``SweepPlan`` (ConfigError, one line, for anything that
does not fit): the levels or rates, the checks between options, the workers' options (local
processes, the compose launcher's containers, workers on other hosts), the workload's, and the
notebook's warning for a label that already has levels. ``harness capacity`` reads its plan here too."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from urllib.parse import urlsplit

from harness import options
from harness.records.level import LEVEL, LevelContext, ServerInfo
from harness.records.base import Objectives, is_level
from harness.energy import meter as telemetry
from harness.errors import ConfigError
from harness.workloads.files import load_prompt_file
from harness.records.notebook import read_records
from harness.load import workload_options as workloads
from harness.load.sweep import SweepPlan
from harness.options import load as load_options, ranges
from harness.options.sweep import option_sets
from harness.options.workers import LOCUST_MASTER_PORT


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


def check_workers(args, open_loop: bool) -> None:
    """The workers' options together (ConfigError, one line); their ranges are declared
    (``harness.options.workers``)."""
    if (args.processes or args.expect_workers) and (open_loop or args.duration or args.prompt_file):
        raise ConfigError(
            "--processes and --expect-workers work with the closed loop and the built-in prompt sets only"
        )
    if args.processes and args.expect_workers:
        raise ConfigError(
            "--processes (workers here) and --expect-workers (workers on other hosts): choose one"
        )
    if args.master_port is not None and not (args.processes or args.expect_workers):
        raise ConfigError("--master-port needs --processes N or --expect-workers N")
    if args.worker_command and not args.processes:
        raise ConfigError("--worker-command needs --processes N (how many workers to start)")


def master_port(args) -> int:
    """The master's port: the one given, else Locust's own for workers elsewhere, else any free one."""
    if args.master_port is not None:
        return args.master_port
    return LOCUST_MASTER_PORT if args.expect_workers else 0


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
    check_workers(args, bool(rates))
    workload = workloads.workload_options(args, bool(rates))
    workloads.check_context(workload, args.max_tokens, args.context_length or None)
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
        prompt_set=workloads.prompt_set_name(args),
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
        master_port=master_port(args),
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
    levels = [
        r for r in read_records(labbook, "level", select=is_level).records if r.get(LEVEL.label) == label
    ]
    if not levels:
        return None
    crowds = ", ".join(str(r[LEVEL.concurrency]) for r in levels)
    return (
        f"label {label!r} already has {len(levels)} level(s) in {labbook} (c = {crowds}); this run's "
        "levels are added to them and summarise shows both runs' rows; pass --append to mean it, "
        "or give a new --label"
    )
