"""Open-loop arrival schedules: pure and seeded (a generator per schedule, never the global one)."""

from __future__ import annotations

import random


def arrival_offsets(rate: float, count: int, poisson: bool, seed: int = 1) -> list[float]:
    """Send times (seconds from the start) of ``count`` requests at ``rate`` per second: evenly
    spaced, or Poisson arrivals (exponential gaps) from a seeded generator of their own."""
    if rate <= 0:
        raise ValueError("rate must be positive")
    if not poisson:
        return [i / rate for i in range(count)]
    rng, t, out = random.Random(seed), 0.0, []
    for _ in range(count):
        out.append(t)
        t += rng.expovariate(rate)
    return out
