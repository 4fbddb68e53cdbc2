"""A curve's energy from its level records: one row per level (output tokens/s, mean
power, idle power, J per output token, output tokens per J, J per request, the cost of a million
output tokens), the operating point's figures in a line, and the words the capacity answer gains.
``harness summarise`` prints them and the run report writes them, so both say the same. Pure:
records in, cells and sentences out; ``-`` where a figure is absent, and every figure from an
imitation (the practice server's) says IMITATION beside it."""

from __future__ import annotations

from harness.measure import curves
from harness.records.level import LEVEL, LevelStats
from harness.energy.record_part import COST, ENERGY, energy_words

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

ENERGY_HEAD = [
    "c",
    "out tok/s",
    "mean W",
    "idle W",
    "J",
    "method",
    "J per output token",
    "output tokens per J",
    "J per request",
    "cost per M output tokens",
    "source",
]


def _f(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def measured(levels: dict[int, dict]) -> bool:
    """Whether any level of the curve has an energy figure or a cost."""
    return any(
        (r.get(LEVEL.energy) or {}).get(ENERGY.energy_j) is not None or r.get(LEVEL.cost)
        for r in levels.values()
    )


def labels(levels: dict[int, dict]) -> list[str]:
    """The labels (imitation, stand-in) of the curve's energy figures: none for a real device."""
    return sorted({str(x) for r in levels.values() if (x := (r.get(LEVEL.energy) or {}).get(ENERGY.label))})


def _source(e: dict) -> str:
    if not e.get(ENERGY.source):
        return "none"
    text = f"{e[ENERGY.source]} {', '.join(e.get(ENERGY.devices, []))}"
    return f"{text} ({e[ENERGY.label].upper()})" if e.get(ENERGY.label) else text


def cost_text(rec: dict) -> str:
    """A level's cost per million output tokens with its basis, or ``-``."""
    cost = rec.get(LEVEL.cost)
    if not cost or cost.get(COST.per_million_output_tokens) is None:
        return "-"
    basis = "per hour" if cost[COST.basis] == "per-hour" else "per kWh"
    return f"{cost[COST.per_million_output_tokens]:.4g} (at {cost[COST.price]:g} {basis})"


def energy_rows(levels: dict[int, dict]) -> list[list[str]]:
    """One row per level, in the order of ``ENERGY_HEAD``."""
    rows = []
    for c in sorted(levels):
        r = levels[c]
        e = r.get(LEVEL.energy) or {}
        rows.append(
            [
                str(c),
                _f(LevelStats.read(r).output_tokens_per_s, ".1f"),
                _f(e.get(ENERGY.mean_power_w), ".1f"),
                _f(e.get(ENERGY.idle_power_w), ".1f"),
                _f(
                    e.get(ENERGY.net_energy_j) if e.get(ENERGY.subtracted_idle) else e.get(ENERGY.energy_j),
                    ".1f",
                ),
                (e.get(ENERGY.method) or "-") + (" net of idle" if e.get(ENERGY.subtracted_idle) else ""),
                _f(e.get(ENERGY.j_per_output_token), ".4g"),
                _f(e.get(ENERGY.output_tokens_per_j), ".4g"),
                _f(e.get(ENERGY.j_per_request), ".4g"),
                cost_text(r),
                _source(e),
            ]
        )
    return rows


def operating_energy_line(levels: dict[int, dict]) -> str | None:
    """The operating point's power, J per output token and cost in a line (None without a point
    or without energy and cost there)."""
    point = curves.curve(levels).operating_point
    if not point or point not in levels:
        return None
    rec = levels[point]
    words, cost = energy_words(rec.get(LEVEL.energy)), cost_text(rec)
    if not words and cost == "-":
        return None
    priced = None if cost == "-" else f"cost {cost.replace(' (at', ' per million output tokens (at', 1)}"
    parts = [p for p in (words, priced) if p]
    return f"at the operating point (c={point}): {'; '.join(parts)}"


def capacity_words(levels: dict[int, dict], capacity: int | None) -> str | None:
    """What the capacity answer gains where energy was measured at that level: "8 at once at 210
    W, 0.9 J per output token" (None otherwise)."""
    if not capacity or capacity not in levels:
        return None
    words = energy_words(levels[capacity].get(LEVEL.energy))
    return f"{capacity} at once {words}" if words else None


def why_none(levels: dict[int, dict]) -> str:
    """Why a curve has no energy figure, from its records' own reasons."""
    reasons = [(r.get(LEVEL.energy) or {}).get(ENERGY.reason) for r in levels.values()]
    said = [x for x in reasons if x]
    if said:
        return str(said[0])
    if any(LEVEL.energy in r for r in levels.values()):
        return "no level has an energy figure"
    return "its sweeps read no telemetry (recorded before --telemetry, or with a harness without it)"
