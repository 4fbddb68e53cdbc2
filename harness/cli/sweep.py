"""``harness sweep``: the closed-loop concurrency sweep, a drop-in for the lab's load-test.py.

Every option of the lab's script keeps its name and meaning; each level's record is validated
and appended to the notebook before the next level starts, and each request's exact sample goes
to a samples file beside it.
"""

from __future__ import annotations

import sys

from harness import options
from harness.records.level import LevelRecord
from harness.records.base import EndpointCheck
from harness.safe_text import keep_secret
from harness.errors import TargetError
from harness.cli.progress import LevelProgress
from harness.records.notebook import check_writable
from harness.energy import meter as telemetry
from harness.exporter import live
from harness.load import sweep as sweeping  # no Locust yet: harness.load.runner is imported when load runs
from harness.load.sweep import SweepPlan
from harness.load.sweep_options import label_warning, plan_from
from harness.options.sweep import option_sets
from harness.report import sweep_lines


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sweep",
        help="closed-loop concurrency sweep (drop-in for the lab's load-test.py)",
        description="Drive an OpenAI-compatible endpoint at each concurrency level and append one "
        "JSON line per level to the notebook.",
    )
    add_options(p)
    p.set_defaults(func=run)


def add_options(p, levels: bool = True, command: str = "sweep") -> None:
    """The sweep's options on ``p``, made from their declarations (``harness.options``)."""
    options.to_argparse(p, *option_sets(levels), command=command)


def print_endpoint(check: EndpointCheck) -> None:
    """What the endpoint proof saw, and its warnings on stderr."""
    lines, warnings = sweep_lines.endpoint_lines(check)
    print("\n".join(lines))
    for line in warnings:
        print(line, file=sys.stderr)


def print_level(r: dict, previous: dict | None = None) -> None:
    """A finished level's lines, each as it lands."""
    for line in sweep_lines.level_lines(r, previous):
        print(line, flush=True)


def refuse_plain_http(plan: SweepPlan) -> None:
    """An https URL to a plain-HTTP port, said at once (TargetError) instead of at the bound."""
    from harness.load import runner  # noqa: F401  (Locust patches ssl: it must come before ssl is imported)
    from harness.endpoints import proof as endpoint_proof

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
    keep_secret(plan.api_key)  # a key in the URL's path is not printed either
    for line in sweep_lines.plan_lines(args, plan):
        print(line, flush=True)
    live.start(args.prometheus_port, args.prometheus_host, sweeping.in_flight(plan))  # a port taken: exit 2
    try:
        if not args.no_endpoint_check:
            print_endpoint(sweeping.prove_endpoint(plan, listed))
        meter = telemetry.start(plan.telemetry)  # absent sources in one line each; the idle baseline
        try:
            return _measure(args, plan, meter)
        finally:
            if meter is not None:
                meter.close()
    finally:
        live.LIVE.close(args.prometheus_hold)


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
        for line in sweep_lines.worker_lines(written[-1]):
            print(line, flush=True)

    if plan.expect_workers:
        print(sweep_lines.waiting_line(plan), flush=True)
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
