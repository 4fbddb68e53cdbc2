"""The client's figures as Prometheus sees them: each metric's name (its unit in the name), help
and histogram buckets declared once, and the running totals built from exact samples by the same
rules as a level record (``harness.measure.levels``): failed requests never enter a latency
histogram, and a TPOT or a token gap exists only where the record's does."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from harness.measure.sample import Sample

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

PREFIX = "harness_client_"
IN_FLIGHT = PREFIX + "in_flight_requests"
COMPLETED = PREFIX + "completed_requests"  # a counter: served with _total
FAILED = PREFIX + "failed_requests"
OUTPUT_TOKENS = PREFIX + "output_tokens"
TTFT = PREFIX + "time_to_first_token_seconds"
TPOT = PREFIX + "time_per_output_token_seconds"
ITL = PREFIX + "inter_token_latency_seconds"
LEVEL_USERS = PREFIX + "level_users"  # a closed loop's concurrency
LEVEL_RATE = PREFIX + "level_requests_per_second"  # an open loop's arrival rate

HELP = {
    IN_FLIGHT: "Requests this client has sent and not yet seen end.",
    COMPLETED: "Requests answered in full (the level records' completed).",
    FAILED: "Requests that failed, cut short or were cancelled at a level's bound (the records' failed).",
    OUTPUT_TOKENS: "Output tokens of the completed requests (usage, else one per text delta).",
    TTFT: "Request sent to its first streamed token, completed requests only.",
    TPOT: "Time per output token after the first, (end - first token) / (tokens - 1), per request.",
    ITL: "Every gap between two tokens of a completed stream.",
    LEVEL_USERS: "The closed loop's concurrency now (users).",
    LEVEL_RATE: "The open loop's arrival rate now (requests per second).",
}

# Bucket bounds in seconds: a first token from milliseconds (a warm cache) to minutes (a long
# queue); a token gap from a fraction of a millisecond to seconds (a stall).
TTFT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0)
TOKEN_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.5, 5.0)


@dataclass
class Histogram:
    """One latency histogram: the count in each bucket (the last is past every bound), the sum."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1  # a bucket holds values <= its bound
        self.total += value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[str, int]]:
        """(le, values at or below it) for each bound, then ``+Inf``: the text format's buckets."""
        out, running = [], 0
        for bound, n in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out


@dataclass
class Figures:
    """The totals since the exporter started counting; ``add`` takes one finished request."""

    completed: int = 0
    failed: int = 0
    output_tokens: int = 0
    ttft: Histogram = field(default_factory=lambda: Histogram(TTFT_BUCKETS))
    tpot: Histogram = field(default_factory=lambda: Histogram(TOKEN_BUCKETS))
    itl: Histogram = field(default_factory=lambda: Histogram(TOKEN_BUCKETS))

    def add(self, sample: Sample) -> None:
        if not sample.ok:
            self.failed += 1
            return
        self.completed += 1
        self.output_tokens += sample.output_tokens or 0
        if sample.ttft is not None:
            self.ttft.observe(sample.ttft)
        if sample.tpot is not None:
            self.tpot.observe(sample.tpot)
        for gap in sample.itl:
            self.itl.observe(gap)


def figures_of(samples: list[Sample]) -> Figures:
    """The totals of ``samples``, as a fresh exporter fed them would serve."""
    out = Figures()
    for s in samples:
        out.add(s)
    return out
