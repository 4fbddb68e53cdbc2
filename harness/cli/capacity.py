"""``harness capacity``: the largest crowd (closed loop) within a promise, found by search.

It doubles the crowd from one until a level breaks the promise, halves the gap to one user, and
runs the two levels at the boundary again until each verdict is stable at the stated confidence
(``harness.sizing.capacity_search``), within a time budget. Every run of a level is a level record on the
notebook (marked with the search's run id and the run's number); the path it took is printed as
it goes, and the answer is one ``capacity`` record (``harness.load.capacity_run`` runs it).

Exit status: 0 when the search ended by itself or at its time budget (the answer is what it
measured); ``SEARCH_ENDED`` (1, as a sweep whose level completed no request) when it ended on a
run the server failed or on a level whose runs contradict each other: every run is still on the
notebook and the capacity record says what passed and why it ended, but the answer is not a
latency verdict. Options refused before any request is sent: 2 (``ConfigError``).
"""

from __future__ import annotations

import sys

from harness import options
from harness.cli import sweep as sweep_cli
from harness.load import capacity_run, sweep_run
from harness.load.sweep_options import plan_from
from harness.options.search import SEARCH
from harness.options.sizing import SIZING
from harness.sizing import capacity_search
from harness.sizing.capacity_search import Search

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


def say(line: str) -> None:
    print(line, flush=True)


def run(args) -> int:
    options.check(args, SEARCH, SIZING.without("promise"))  # in range; the promise is the criterion's
    criterion = capacity_search.check(args)
    if args.rate_step is not None:
        args.rate = f"{args.rate_step:g}"  # the plan is an open loop; each level's rate is set below
    plan = plan_from(args)
    listed = sweep_run.checked(plan, sweep_cli.warn, plain_http=False)
    unlisted = sweep_run.unlisted(listed, args.model)
    if unlisted:
        sweep_cli.warn(unlisted)
    found = Search(args.rate_step)
    for line in capacity_search.head_lines(args, plan.context, criterion, found):
        say(line)
    got = capacity_run.capacity(args, plan, listed, criterion, found, say, sweep_cli.print_endpoint)
    for line in capacity_search.answer_lines(args, criterion, found, got, plan.labbook):
        print(line)
    if found.ended:
        print(f"harness capacity: the search ended without an answer: {found.ended}", file=sys.stderr)
        return SEARCH_ENDED
    return 0
