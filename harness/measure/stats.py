"""Pure summary arithmetic (docs/architecture.md, "Definitions"). No I/O, no clocks."""

from __future__ import annotations

import math
import random
from array import array
from typing import Callable, Iterable, Sequence, cast

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


def percentile(values: Iterable[float], p: float) -> float | None:
    """Nearest rank: the smallest value with at least p% of the values at or below it.
    An empty input gives None, never 0."""
    return ranked(sorted(values), p)


def ranked(ordered: Sequence[float], p: float) -> float | None:
    """``percentile`` of values already in ascending order (``in_order``)."""
    if not len(ordered):
        return None
    rank = max(1, math.ceil(len(ordered) * p / 100))
    value = ordered[rank - 1]
    return float(value) if hasattr(value, "dtype") else value  # numpy's float64 as a plain float


BIG = 100_000  # past this many values, a column is sorted by numpy (8 bytes a value, not 32)


def in_order(values: Sequence[float]) -> Sequence[float]:
    """The values in ascending order: ``sorted`` for a list, numpy's sort for a large array of
    doubles (the same order, without a Python float for each value; an hour's token gaps are
    millions of them)."""
    if isinstance(values, array) and values.typecode == "d" and len(values) > BIG:
        import numpy

        return cast(Sequence[float], numpy.sort(numpy.frombuffer(values, dtype=numpy.float64)))
    return sorted(values)


def median(values: Sequence[float]) -> float | None:
    return percentile(values, 50)


def value_range(values: Sequence[float]) -> tuple[float, float] | None:
    """The smallest and the largest value (the spread of R repeated runs); None when empty."""
    return (min(values), max(values)) if values else None


def bootstrap(
    values: Sequence[float],
    stat: Callable[[list[float]], float | None],
    confidence: float = 0.9,
    resamples: int = 1000,
    seed: int = 1,
) -> tuple[float, float] | None:
    """A percentile bootstrap interval of ``stat``: resample the values with replacement
    ``resamples`` times (a seeded generator, so the same values give the same interval), compute
    ``stat`` of each resample and return the central ``confidence`` share of those. None when
    there are no values. It treats requests as independent, which a closed loop only
    approximates, so the interval is a floor on the real uncertainty."""
    if not values:
        return None
    rng = random.Random(seed)
    pool = list(values)
    stats = sorted(v for _ in range(resamples) if (v := stat(rng.choices(pool, k=len(pool)))) is not None)
    cut = round(len(stats) * (1 - confidence) / 2)
    return stats[cut], stats[len(stats) - 1 - cut]


def all_worse_chance(m: int, n: int) -> float:
    """The chance that all ``n`` runs of one side fall beyond all ``m`` runs of the other when
    both come from the same distribution (an exact rank test: one ordering of C(m+n, n))."""
    return 1 / math.comb(m + n, n) if m > 0 and n > 0 else 1.0
