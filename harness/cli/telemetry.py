"""``harness telemetry``: which telemetry sources read this machine, one line for each that does
not, and a short reading of each (an idle baseline when nothing runs). ``--telemetry nvml`` where
there is no NVML is one line and exit 2 (this command only checks; ``harness sweep`` says the same
line and measures the levels without it); ``auto`` takes what is here."""

from __future__ import annotations

import json

from harness import options
from harness.energy.detect import detect
from harness.energy.readings import summary_lines
from harness.energy.sampler import DEFAULT_INTERVAL, idle_baseline
from harness.options.shared import AS_JSON
from harness.options.telemetry import TELEMETRY


def add_parser(sub) -> None:
    p = sub.add_parser(
        "telemetry",
        help="which power and energy sources read this machine, and a short idle reading of each",
        description="Detect the telemetry sources (NVML, amdsmi, amdgpu hwmon, powermetrics, RAPL), say in "
        "one line why each absent one is absent, and read the present ones for a few seconds.",
    )
    options.to_argparse(p, TELEMETRY, command="telemetry")
    p.add_argument("--seconds", type=float, default=2.0, help="how long to read (0: detect only)")
    p.add_argument("--interval", type=float, default=DEFAULT_INTERVAL, help="seconds between readings")
    options.to_argparse(p, AS_JSON, command="telemetry")
    p.set_defaults(func=run)


def run(args) -> int:
    found = detect(args.telemetry)
    try:
        refused = found.refusal()
        if refused is not None:
            raise refused
        reading = None
        if found.sources and args.seconds > 0:
            reading = idle_baseline(found.sources, args.seconds, args.interval)
    finally:
        found.close()
    if args.json:
        print(json.dumps({**found.record(), "reading": reading}, indent=2))
        return 0
    for line in found.lines():
        print(f"    {line}")
    for line in summary_lines(reading):
        print(f"==> {line}")
    if not found.sources:
        print("==> no telemetry source here")
    return 0
