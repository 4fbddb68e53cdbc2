"""Power and energy while the load runs, and the prices that turn them into a cost per million
output tokens. Shared by ``harness sweep``, ``harness capacity``, ``harness measure`` and Locust."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from harness.energy import IMITATIONS, KINDS
from harness.energy.arithmetic import MAX_PRICE, check_price
from harness.options import Option, OptionSet

# the source words --telemetry takes besides auto and none
SOURCE_WORDS = KINDS + IMITATIONS
DEFAULT_INTERVAL_S = 0.5
DEFAULT_IDLE_S = 2.0


def _one_price(ns: Any) -> None:
    check_price(getattr(ns, "price_per_hour", None), getattr(ns, "price_per_kwh", None))


TELEMETRY = Option(
    "telemetry",
    default="auto",
    env_default="HARNESS_TELEMETRY",
    help="power and energy during each level: auto (every source present here; the default, or "
    f"HARNESS_TELEMETRY's), none, or any of {', '.join(SOURCE_WORDS)} comma-separated (practice: the "
    "practice server's IMITATION figure, never read by auto); an absent source is one line and a "
    "null with its reason",
    reader="harness.load.locust_options:telemetry_words",
    defaults=MappingProxyType({"telemetry": "auto"}),  # the detection command: every source
)
TELEMETRY_INTERVAL = Option(
    "telemetry-interval", float, DEFAULT_INTERVAL_S, "seconds between telemetry readings", low=0.05, high=60
)
IDLE_SECONDS = Option(
    "idle-seconds",
    float,
    DEFAULT_IDLE_S,
    "the idle baseline: seconds of telemetry read before the first level (0: none)",
    low=0,
    high=600,
)
SUBTRACT_IDLE = Option(
    "subtract-idle",
    bool,
    False,
    "take the idle baseline's power off each level's energy before the per-token figures",
)
PRICE_PER_HOUR = Option(
    "price-per-hour",
    float,
    help="the machine's price per hour: each level's cost per million output tokens from its wall clock",
    low=0,
    high=MAX_PRICE,
)
PRICE_PER_KWH = Option(
    "price-per-kwh",
    float,
    help="the price of a kWh: each level's cost per million output tokens from its measured energy",
    low=0,
    high=MAX_PRICE,
)

TELEMETRY_SET = OptionSet(
    "telemetry",
    (TELEMETRY, TELEMETRY_INTERVAL, IDLE_SECONDS, SUBTRACT_IDLE, PRICE_PER_HOUR, PRICE_PER_KWH),
    rules=(_one_price,),
)
