"""``harness sweep``: the closed-loop concurrency sweep, a drop-in for the lab's load-test.py.

Every option of the lab's script keeps its name and meaning; each level's record is validated
and appended to the notebook before the next level starts, and each request's exact sample goes
to a samples file beside it (``harness.load.sweep_run`` runs it; this module prints).
"""

from __future__ import annotations

import sys

from harness import options
from harness.records.base import EndpointCheck
from harness.safe_text import keep_secret
from harness.cli.progress import LevelProgress
from harness.load import sweep_run  # no Locust yet: harness.load.runner is imported when load runs
from harness.load.sweep import SweepPlan
from harness.load.sweep_options import plan_from
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


def warn(line: str) -> None:
    print(line, file=sys.stderr)


class Shown:
    """A sweep's lines, each printed as it comes (``harness.load.sweep_run.SweepView``)."""

    def __init__(self, plan: SweepPlan) -> None:
        self.plan = plan
        self.bar = LevelProgress()
        self.progress = self.bar.update
        self.endpoint = print_endpoint

    def before_levels(self) -> None:
        if self.plan.expect_workers:
            print(sweep_lines.waiting_line(self.plan), flush=True)

    def ready(self) -> None:
        for line in sweep_lines.ready_lines(self.plan):
            print(line, flush=True)

    def level(self, record: dict, previous: dict | None) -> None:
        self.bar.end()
        print_level(record, previous)
        for line in sweep_lines.worker_lines(record):
            print(line, flush=True)

    def end(self, swept: sweep_run.Swept) -> None:
        self.bar.end()
        out, err = sweep_lines.end_lines(swept, self.plan)
        for line in out:
            print(line)
        for line in err:
            warn(line)


def run(args) -> int:
    plan = plan_from(args)
    listed = sweep_run.checked(plan, warn, label=None if args.append else args.label)
    unlisted = sweep_run.unlisted(listed, args.model)
    if unlisted:
        warn(f"{unlisted}; requests may fail")
    keep_secret(plan.api_key)  # a key in the URL's path is not printed either
    for line in sweep_lines.plan_lines(args, plan):
        print(line, flush=True)
    exporting = sweep_run.Exporting(args.prometheus_port, args.prometheus_host, args.prometheus_hold)
    return sweep_run.sweep(plan, listed, Shown(plan), not args.no_endpoint_check, exporting).status
