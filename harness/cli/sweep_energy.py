"""The sweep's energy options (``--telemetry``, ``--subtract-idle``, the prices) and what it prints
of them: the sources found and one line for each absent one before the first level, the idle
baseline, and each level's energy and cost line. ``harness sweep``, ``harness capacity`` and
``harness measure`` (each speed test's repetitions; the engine tables' energy) share them. A
source asked for by name that is absent is one line, and the levels are measured without it
(said so in one line, the rest measured)."""

from __future__ import annotations

import os
import sys

from harness.core import bounds, energy
from harness.core.energy_records import cost_part, energy_lines, energy_part
from harness.io.telemetry import KINDS
from harness.io.telemetry.detect import IMITATIONS, parse_spec
from harness.io.telemetry.meter import DEFAULT_IDLE_S, Meter, TelemetryPlan, idle_text, open_meter
from harness.io.telemetry.practice import ROUTE as PRACTICE_ROUTE
from harness.io.telemetry.sampler import DEFAULT_INTERVAL


def add_options(p) -> None:
    p.add_argument(
        "--telemetry",
        default=os.environ.get("HARNESS_TELEMETRY") or "auto",
        help="power and energy during each level: auto (every source present here; the default, or "
        "HARNESS_TELEMETRY's), none, or any of "
        f"{', '.join(KINDS + IMITATIONS)} comma-separated (practice: the practice server's IMITATION "
        "figure, never read by auto); an absent source is one line and a null with its reason",
    )
    p.add_argument(
        "--telemetry-interval",
        type=float,
        default=DEFAULT_INTERVAL,
        help="seconds between telemetry readings",
    )
    p.add_argument(
        "--idle-seconds",
        type=float,
        default=DEFAULT_IDLE_S,
        help="the idle baseline: seconds of telemetry read before the first level (0: none)",
    )
    p.add_argument(
        "--subtract-idle",
        action="store_true",
        help="take the idle baseline's power off each level's energy before the per-token figures",
    )
    p.add_argument(
        "--price-per-hour",
        type=float,
        help="the machine's price per hour: each level's cost per million output tokens from its wall clock",
    )
    p.add_argument(
        "--price-per-kwh",
        type=float,
        help="the price of a kWh: each level's cost per million output tokens from its measured energy",
    )


def plan_options(args, root: str) -> dict:
    """The SweepPlan fields of these options, checked (ConfigError, one line)."""
    parse_spec(args.telemetry)  # a word that is none of them: one line before anything starts
    bounds.number("--telemetry-interval", args.telemetry_interval, 0.05, 60)
    bounds.number("--idle-seconds", args.idle_seconds, 0, 600)
    energy.check_price(args.price_per_hour, args.price_per_kwh)
    plan = TelemetryPlan(
        spec=args.telemetry,
        interval=args.telemetry_interval,
        idle_s=args.idle_seconds,
        subtract_idle=args.subtract_idle,
        practice_url=root + PRACTICE_ROUTE,
    )
    return {"telemetry": plan, "price_per_hour": args.price_per_hour, "price_per_kwh": args.price_per_kwh}


def start(telemetry: TelemetryPlan | None) -> Meter | None:
    """The sweep's meter, its absent sources said in one line each (stderr) and its present ones
    and idle baseline on stdout; None without a plan."""
    if telemetry is None:
        return None
    meter = open_meter(telemetry)
    if telemetry.spec.strip().lower() == "none":
        return meter
    named = meter.found.by_name
    for line in meter.lines():
        tail = "; the levels are measured without it" if named else ""
        print(
            f"{'warning: ' if named else '    '}telemetry: {line}{tail}", file=sys.stderr if named else None
        )
    found = meter.found.sources
    if not found:
        if not named:  # asked by name: its one line above says it all
            print("    telemetry: no source here; the levels carry no energy figure (a null with its reason)")
        return meter
    names = ", ".join(
        f"{s.kind} {s.device}" + (" [IMITATION]" if s.kind in IMITATIONS else "") for s in found
    )
    print(f"    telemetry: reading {names} every {telemetry.interval:g} s", flush=True)
    idle = meter.baseline()
    if idle is not None:
        print(f"    {idle_text(idle, telemetry)}", flush=True)
    return meter


def level_lines(r: dict) -> list[str]:
    """A level's energy and cost lines (``core.energy_records.energy_lines``: headless Locust prints
    the same)."""
    return energy_lines(r)


def record_parts(
    meter: Meter | None,
    summary: dict | None,
    output_tokens: int | None,
    requests: int | None,
    wall_s: float | None,
    price_per_hour: float | None,
    price_per_kwh: float | None,
) -> dict:
    """The ``energy`` and ``cost`` parts of a record measured outside the sweep's levels (``harness
    measure``'s speed tests), as a level record carries them: ``{}`` for neither."""
    out: dict = {}
    part = None
    if meter is not None:
        asked, idle, absent, net = meter.asked, meter.idle, meter.absent, meter.plan.subtract_idle
        part = out["energy"] = energy_part(summary, idle, asked, absent, output_tokens, requests, net)
    joules = None if part is None else part["energy_j"]
    cost = cost_part(output_tokens, wall_s, joules, price_per_hour, price_per_kwh)
    if cost is not None:
        out["cost"] = cost
    return out
