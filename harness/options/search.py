"""``harness capacity``'s own options: what the search judges and how far and long it goes. The
bounds that depend on another option (``--start`` at most ``--max-users``, ``--max-runs`` at
least ``--confirm``) are the search's own check."""

from __future__ import annotations

from harness import bounds
from harness.options import Option, OptionSet

CRITERION = Option(
    "criterion",
    default="ttft-p95",
    help="METRIC-PCT (ttft, tpot, itl, e2e; p50, p90, p95, p99) or goodput (the share of requests "
    "within the goodput objective --slo-ttft/--slo-tpot, at least --promise)",
)
MAX_USERS = Option(
    "max-users",
    int,
    64,
    "the largest crowd the search may try (with --rate-step: steps)",
    low=1,
    high=bounds.MAX_CONCURRENCY,
)
RATE_STEP = Option(
    "rate-step",
    float,
    help="search over arrival rate instead (open loop): levels of k x this many requests/s, each at "
    "least --requests and 10 s of arrivals",
    low=1e-3,
    high=bounds.MAX_RATE_RPS,
)
START = Option(
    "start", int, 1, "the first crowd tried (doubling from there)", low=1, high=bounds.MAX_CONCURRENCY
)
CONFIDENCE = Option("confidence", float, 0.9, "of the bootstrap interval per verdict", low=0.5, high=0.999)
CONFIRM = Option("confirm", int, 2, "runs each boundary level needs at least", low=1, high=20)
MAX_RUNS = Option("max-runs", int, 4, "runs of an unsure level before it counts as failing", low=1, high=50)
TIME_BUDGET = Option(
    "time-budget",
    float,
    240.0,
    "seconds the search may take",
    low=1e-3,
    high=bounds.MAX_SECONDS,
    positive=True,
)

SEARCH = OptionSet(
    "search", (CRITERION, MAX_USERS, RATE_STEP, START, CONFIDENCE, CONFIRM, MAX_RUNS, TIME_BUDGET)
)
