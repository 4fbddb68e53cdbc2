"""Ground truth for one request: when it was received, admitted, and each token scheduled and sent.

Times are ``time.monotonic()`` seconds (see ``harness.practice.app``); ``GET /practice/truth/<id>``
returns ``Truth.as_dict()``.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

# The requests whose truth the server keeps, the latest ones: enough for the client benches'
# largest level, and about 15 MB at 64 tokens each, so a server that runs for hours stays flat.
TRUTH_KEEP = 10_000
LATENESS_KEEP = 1 << 18  # tokens' lateness kept for the percentiles (2 MiB; a bench sends fewer)
STEPS_KEEP = 1 << 16  # steps' lateness and spread kept (512 KiB each)


class Recent:
    """A timing series bounded to its latest ``size`` values, with the count, sum and largest
    of all it was given: a server that runs for hours keeps a few megabytes of it, and its
    percentiles describe the latest ``size`` events (all of them in a bench's run)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.values = array("d")
        self.count = 0
        self.total = 0.0
        self.largest: float | None = None

    def append(self, value: float) -> None:
        if len(self.values) < self.size:
            self.values.append(value)
        else:
            self.values[self.count % self.size] = value
        self.count += 1
        self.total += value
        self.largest = value if self.largest is None else max(self.largest, value)

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self):
        return iter(self.values)


@dataclass(slots=True)
class Truth:
    id: str
    received: float
    received_wall: float
    prompt_tokens: int
    max_tokens: int
    scheduled: array = field(default_factory=lambda: array("d"))
    sent: array = field(default_factory=lambda: array("d"))
    cached_tokens: int = 0
    seat: int | None = None
    admitted: float | None = None
    finish_reason: str | None = None
    outcome: str = "running"
    fault: str | None = None
    prefix_cache: str | None = None  # the profile's cache: per-seat, pooled or none

    @property
    def cached_share(self) -> float | None:
        return None if not self.prompt_tokens else round(self.cached_tokens / self.prompt_tokens, 4)

    def as_dict(self) -> dict:
        first = self.sent[0] if self.sent else None
        return {
            "id": self.id,
            "clock": "monotonic",
            "received": self.received,
            "received_wall": self.received_wall,
            "admitted": self.admitted,
            "queued_s": None if self.admitted is None else self.admitted - self.received,
            "seat": self.seat,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,  # prompt tokens it did not prefill: found in its cache
            "cached_share": self.cached_share,
            "prefix_cache": self.prefix_cache,
            "max_tokens": self.max_tokens,
            "output_tokens": len(self.sent),
            "ttft_s": None if first is None else first - self.received,
            "scheduled": list(self.scheduled),
            "sent": list(self.sent),
            "finish_reason": self.finish_reason,
            "outcome": self.outcome,
            "fault": self.fault,
        }
