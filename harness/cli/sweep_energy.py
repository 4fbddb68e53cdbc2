"""The telemetry options of ``harness sweep``, ``harness capacity`` and ``harness measure``
(``--telemetry``, its interval, the idle baseline, ``--subtract-idle``, the prices): declared
here, checked and used by ``harness.energy.meter`` (``plan_options``, ``start``, ``record_parts``)."""

from __future__ import annotations

import os

from harness.energy import IMITATIONS, KINDS
from harness.energy.meter import DEFAULT_IDLE_S
from harness.energy.sampler import DEFAULT_INTERVAL


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
