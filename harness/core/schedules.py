"""Load shapes, pure: open-loop arrival schedules (seeded, a generator per schedule, never the
global one) and how a level's requests are split over Locust workers."""

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


def shares(count: int, users: dict[str, int]) -> dict[str, int]:
    """Split a level's ``count`` requests over workers in proportion to their users (exact total)."""
    total = sum(users.values())
    if total <= 0:
        return {k: 0 for k in users}
    out = {k: count * u // total for k, u in users.items()}
    leftover = count - sum(out.values())
    for k in sorted(users, key=lambda k: -users[k])[:leftover]:
        out[k] += 1
    return out
