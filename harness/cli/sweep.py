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

from harness.core import bounds
from harness.core.prompts import PROMPT_SETS
from harness.core.level_records import LevelContext, LevelRecord, ServerInfo
from harness.core.records import DEFAULT_SLO_TPOT_S, DEFAULT_SLO_TTFT_S, UNKNOWN, Objectives, is_level
from harness.errors import ConfigError, TargetError
from harness.io.input_files import load_prompt_file
from harness.io.progress import LevelProgress
from harness.io.notebook import check_writable, read_records
from harness.cli import sweep_energy, sweep_workers, sweep_workloads
from harness.cli.sweep_output import print_endpoint, print_level, print_plan
from harness.load import sweep as sweeping  # no Locust yet: harness.load.runner is imported when load runs
from harness.load.sweep import SweepPlan


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sweep",
        help="closed-loop concurrency sweep (drop-in for the lab's load-test.py)",
        description="Drive an OpenAI-compatible endpoint at each concurrency level and append one "
        "JSON line per level to the notebook.",
    )
    add_options(p)
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each level this many times in a row (each run its own record, marked repeat i of R); "
        "summarise and the report then show each figure with the range of the R runs",
    )
    p.set_defaults(func=run)


# Long by nature: one declaration per option, in the order of the lab's load-test.py.
def add_options(p, levels: bool = True) -> None:
    """The sweep's options on ``p``; without ``levels`` (``harness capacity`` chooses its own) no
    --concurrency, --rate, --poisson or --duration."""
    p.add_argument(
        "--base-url",
        default="http://127.0.0.1:8000/v1",
        help="the server, with or without /v1 (http://HOST:PORT means http://HOST:PORT/v1)",
    )
    p.add_argument("--model", required=True, help="model name the server reports at /v1/models")
    if levels:
        p.add_argument("--concurrency", default="1,5,10,20", help="comma-separated levels, run in order")
    p.add_argument("--requests", type=int, default=40, help="requests per level (at least)")
    p.add_argument(
        "--min-rounds", type=int, default=0, help="at least this many requests per worker per level"
    )
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds one request may take in all (headers and stream)",
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        help="seconds a request may go without a byte from the server (default: --timeout)",
    )
    p.add_argument(
        "--timeout-per-user",
        type=float,
        default=0.0,
        help="closed loop: each request's total bound at c users is the larger of --timeout and "
        "c x this many seconds (a request may wait for a seat behind the others; 0: --timeout only)",
    )
    p.add_argument("--prompt-set", default="mixed", choices=list(PROMPT_SETS))
    p.add_argument(
        "--prompt-file", help="JSONL prompts ({'prompt': ...} or {'messages': [...]}) instead of a set"
    )
    p.add_argument("--warmup", type=int, default=1, help="discarded short requests before the first level")
    p.add_argument(
        "--slo-ttft", type=float, default=DEFAULT_SLO_TTFT_S, help="goodput objective for TTFT, seconds"
    )
    p.add_argument(
        "--slo-tpot", type=float, default=DEFAULT_SLO_TPOT_S, help="goodput objective for TPOT, seconds"
    )
    p.add_argument("--label", default="run")
    p.add_argument(
        "--append",
        action="store_true",
        help="add this run's levels to a label that already has levels in the notebook, without "
        "the warning (summarise then shows the levels of both runs)",
    )
    p.add_argument("--engine", default=UNKNOWN)
    p.add_argument("--engine-version", default=UNKNOWN)
    p.add_argument("--host-desc", default=UNKNOWN, help="machine description for the record")
    p.add_argument("--quant", default=UNKNOWN)
    p.add_argument(
        "--context-length", type=int, default=0, help="context per sequence the server was started with"
    )
    p.add_argument("--server-slots", type=int, default=0, help="sequences the server runs at once")
    p.add_argument(
        "--api-key-env", default="LOADTEST_API_KEY", help="environment variable holding the API key"
    )
    p.add_argument("--labbook", default="labbook.md", help="notebook to append one JSON line per level to")
    p.add_argument("--samples", help="file for per-request samples (default: beside the notebook)")
    if levels:
        p.add_argument(
            "--rate",
            help="open loop: comma-separated arrival rates (requests/s), one level each, instead of "
            "--concurrency",
        )
        p.add_argument(
            "--poisson", action="store_true", help="with --rate: Poisson arrivals instead of evenly spaced"
        )
        p.add_argument(
            "--duration",
            type=float,
            help="closed loop for this many seconds per level (then drain) instead of a request count",
        )
    p.add_argument("--seed", type=int, default=1, help="seed for arrivals and drawn lengths")
    sweep_workloads.add_options(p, levels)
    sweep_workers.add_options(p)
    p.add_argument(
        "--no-endpoint-check",
        action="store_true",
        help="skip the proof before the first level (model listed, one request with text, finish "
        "reason and usage, the server's context fits the prompts)",
    )
    p.add_argument(
        "--metrics-url",
        help="engine /metrics URL to sample during each level (default: derived from "
        "--base-url; 'none' to skip)",
    )
    sweep_energy.add_options(p)


def parse_rates(text: str) -> list[float]:
    return bounds.number_list("--rate", text, 1e-3, bounds.MAX_RATE_RPS)


def parse_levels(text: str) -> list[int]:
    return bounds.whole_list("--concurrency", text, 1, bounds.MAX_CONCURRENCY)


def check_numbers(args) -> None:
    """Every numeric option in its range before anything starts (ConfigError, one line each)."""
    whole = lambda name, value, low, high: bounds.number(name, value, low, high, whole=True)  # noqa: E731
    whole("--requests", args.requests, 1, bounds.MAX_REQUESTS)
    whole("--min-rounds", args.min_rounds, 0, bounds.MAX_REQUESTS)
    whole("--max-tokens", args.max_tokens, 2, bounds.MAX_TOKENS)
    whole("--warmup", args.warmup, 0, 1000)
    whole("--repeat", getattr(args, "repeat", 1), 1, 100)
    whole("--processes", args.processes, 0, 4 * (os.cpu_count() or 1))
    whole("--context-length", args.context_length, 0, 100_000_000)
    whole("--server-slots", args.server_slots, 0, bounds.MAX_CONCURRENCY)
    bounds.number("--temperature", args.temperature, 0, 10)
    bounds.Bounds.of(args.timeout, args.idle_timeout)
    bounds.number("--timeout-per-user", args.timeout_per_user, 0, bounds.MAX_SECONDS)
    bounds.seconds("--slo-ttft", args.slo_ttft)
    bounds.seconds("--slo-tpot", args.slo_tpot)
    if args.duration is not None:
        bounds.seconds("--duration", args.duration)


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
        idle_timeout=args.idle_timeout,
        repeat=getattr(args, "repeat", 1),
        **workload,
        **sweep_energy.plan_options(args, root),
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
    meter = sweep_energy.start(plan.telemetry)  # absent sources in one line each; the idle baseline
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
