"""The capacity search run through the sweep's load: the endpoint proof, the live collector and the
meter held open, the warm-up, each run of a level measured and written as a level record, and the
answer written as one ``capacity`` record. ``harness.sizing.capacity_search`` decides which level
runs next and words the path; this module runs the levels it names. It prints nothing: the caller
hears each line (``say``) and the proof (``endpoint``)."""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import replace
from typing import Callable

from harness.energy.meter import Meter
from harness.load import sweep as sweeping
from harness.load.sweep import SweepPlan
from harness.load.sweep_run import Exporting, metered, served
from harness.records.base import EndpointCheck
from harness.records.level import RunMark
from harness.records.notebook import append_record
from harness.sizing import capacity_search
from harness.sizing.capacity_search import Answer, Measured, Search
from harness.sizing.criterion import Criterion


def measure_runs(plan: SweepPlan, meter: Meter | None) -> capacity_search.Measure:
    """Each run of a level through the sweep's load, written to the notebook as a level record
    (an open-loop level sends at least ten seconds of requests at its rate)."""

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


def capacity(
    args: argparse.Namespace,
    plan: SweepPlan,
    listed: list[str],
    criterion: Criterion,
    found: Search,
    say: Callable[[str], None],
    endpoint: Callable[[EndpointCheck], None],
) -> Answer:
    """The search from its endpoint proof (unless ``--no-endpoint-check``) to its answer, appended
    to the notebook as a ``capacity`` record; each run's line goes to ``say`` as it is measured."""
    if not args.no_endpoint_check:
        endpoint(sweeping.prove_endpoint(plan, listed))
    exporting = Exporting(args.prometheus_port, args.prometheus_host, args.prometheus_hold)
    with served(plan, exporting), metered(plan) as meter:
        sweeping.warm_up(plan)
        started = time.monotonic()
        measure = measure_runs(plan, meter)
        capacity_search.search(args, criterion, plan.context.objectives, found, started, measure, say)
    context = {**plan.context.__dict__, "server_slots": args.server_slots or None}
    got = capacity_search.answer(args, context, plan.run_id, criterion, found, time.monotonic() - started)
    append_record(plan.labbook, got.record.to_dict(), "capacity")
    return got
