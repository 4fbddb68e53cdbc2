"""The goodput objective every level is judged against (a request is good within both), and the
thresholds that fail a headless Locust run."""

from __future__ import annotations

from harness import bounds
from harness.records.base import DEFAULT_SLO_TPOT_S, DEFAULT_SLO_TTFT_S
from harness.options import Option, OptionSet

SLO_TTFT = Option(
    "slo-ttft",
    float,
    DEFAULT_SLO_TTFT_S,
    "goodput objective for TTFT, seconds",
    low=1e-3,
    high=bounds.MAX_SECONDS,
    positive=True,
)
SLO_TPOT = Option(
    "slo-tpot",
    float,
    DEFAULT_SLO_TPOT_S,
    "goodput objective for TPOT, seconds",
    low=1e-3,
    high=bounds.MAX_SECONDS,
    positive=True,
)
TTFT_P95_MAX = Option(
    "ttft-p95-max",
    float,
    0.0,
    "headless: fail when TTFT p95 exceeds this (s; 0: no threshold)",
    low=0,
    high=bounds.MAX_SECONDS,
)
FAIL_RATIO_MAX = Option(
    "fail-ratio-max",
    float,
    -1.0,
    "headless: fail above this failure ratio (negative: no threshold)",
    low=-1,
    high=1,
)

SLO = OptionSet("slo", (SLO_TTFT, SLO_TPOT))
LOCUST = OptionSet("slo", (TTFT_P95_MAX, FAIL_RATIO_MAX))
