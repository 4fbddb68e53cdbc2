"""``harness capacity``: the largest crowd (closed loop) within a promise, found by search.

It doubles the crowd from one until a level breaks the promise, halves the gap to one user, and
runs the two levels at the boundary again until each verdict is stable at the stated confidence
(``harness.sizing.capacity_search``), within a time budget. Every run of a level is a level record on the
notebook (marked with the search's run id and the run's number); the path it took is printed as
it goes, and the answer is one ``capacity`` record.

Exit status: 0 when the search ended by itself or at its time budget (the answer is what it
measured); ``SEARCH_ENDED`` (1, as a sweep whose level completed no request) when it ended on a
run the server failed or on a level whose runs contradict each other: every run is still on the
notebook and the capacity record says what passed and why it ended, but the answer is not a
latency verdict. Options refused before any request is sent: 2 (``ConfigError``).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import replace

from harness import options
from harness.cli import sweep as sweep_cli
from harness.load.sweep_options import plan_from
from harness.records.level import RunMark
from harness.energy import meter as telemetry
from harness.exporter import live
from harness.records.notebook import append_record, check_writable
from harness.options.search import SEARCH
from harness.options.sizing import SIZING
from harness.load import sweep as sweeping
from harness.sizing import capacity_search
from harness.sizing.capacity_search import Measured, Search

SEARCH_ENDED = 1  # the server failed a run, or a level's runs contradict each other (module docstring)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "capacity",
        help="the largest crowd within a promise, found by search (p95 TTFT by default)",
        description="Search over concurrency for the largest crowd whose criterion stays within the "
        "promise: doubling, then halving the gap to one user, then repeating the boundary levels "
        "until each verdict is stable. Prints the path, appends every level and one capacity record.",
    )
    options.to_argparse(p, SEARCH, SIZING, command="capacity")
    sweep_cli.add_options(p, levels=False, command="capacity")
    p.set_defaults(func=run, concurrency="1", rate=None, duration=None)  # the plan's levels: the search's


def run(args) -> int:
    options.check(args, SEARCH, SIZING.without("promise"))  # in range; the promise is the criterion's
    criterion = capacity_search.check(args)
    if args.rate_step is not None:
        args.rate = f"{args.rate_step:g}"  # the plan is an open loop; each level's rate is set below
    plan = plan_from(args)
    check_writable(plan.labbook)
    check_writable(plan.samples_path, "--samples")
    listed = sweeping.list_models(plan)
    if listed and args.model not in listed:
        print(f"warning: the server lists {', '.join(map(str, listed))}, not {args.model!r}", file=sys.stderr)
    found = Search(args.rate_step)
    for line in capacity_search.head_lines(args, plan.context, criterion, found):
        print(line, flush=True)
    if not args.no_endpoint_check:
        sweep_cli.print_endpoint(sweeping.prove_endpoint(plan, listed))
    live.start(args.prometheus_port, args.prometheus_host, sweeping.in_flight(plan))  # a port taken: exit 2
    meter = telemetry.start(plan.telemetry)  # absent sources in one line each; the idle baseline
    try:
        sweeping.warm_up(plan)
        started = time.monotonic()
        say = lambda line: print(line, flush=True)  # noqa: E731
        capacity_search.search(
            args, criterion, plan.context.objectives, found, started, _measure(plan, meter), say
        )
    finally:
        live.LIVE.close(args.prometheus_hold)
        if meter is not None:
            meter.close()
    context = {**plan.context.__dict__, "server_slots": args.server_slots or None}
    got = capacity_search.answer(args, context, plan.run_id, criterion, found, time.monotonic() - started)
    append_record(plan.labbook, got.record.to_dict(), "capacity")
    for line in capacity_search.answer_lines(args, criterion, found, got, plan.labbook):
        print(line)
    if found.ended:
        print(f"harness capacity: the search ended without an answer: {found.ended}", file=sys.stderr)
        return SEARCH_ENDED
    return 0


def _measure(plan, meter) -> capacity_search.Measure:
    """Each run of a level through the sweep's load, written to the notebook as a level record."""

    def measure(k: int, rate: float | None, number: int) -> Measured:
        level_plan = (
            plan if rate is None else replace(plan, requests=max(plan.requests, math.ceil(rate * 10)))
        )
        result, concurrency, arrival = sweeping.run_level(
            level_plan, k if rate is None else rate, meter=meter
        )
        mark = RunMark(plan.run_id, number)
        written = sweeping.record_level(level_plan, result, concurrency, arrival, mark, meter)
        return Measured(result.samples, result.wall_s, concurrency, written.energy)

    return measure
