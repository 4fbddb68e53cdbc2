"""Pure summary arithmetic (docs/architecture.md, "Definitions"). No I/O, no clocks."""

from __future__ import annotations

import math
from typing import Iterable, Sequence


def percentile(values: Iterable[float], p: float) -> float | None:
    """Nearest rank: the smallest value with at least p% of the values at or below it.
    An empty input gives None, never 0."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(len(ordered) * p / 100))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float | None:
    return percentile(values, 50)
