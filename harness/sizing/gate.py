"""The regression gate (``harness gate``): a candidate's level records against a baseline's, metric
by metric at every level, knowing the run-to-run noise. Pure functions over records (no I/O).

Records are grouped into levels by the load that was *offered*: a closed loop by its crowd
(``concurrency``), an open loop or a trace replay by its arrival rate (``rate_rps``; there
``concurrency`` holds the peak in flight, an outcome of the run, which differs between a fast and
a slow server at one rate). Two sides are comparable only when they ran alike: each of
``CONDITIONS`` holds one value in every record of both sides, and both measured the same levels.
Otherwise the gate cannot decide, and says why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from harness.records.level import LEVEL, STATS, Arrival, LevelStats
from harness.safe_text import safe_text
from harness.measure.stats import all_worse_chance, median
from harness.workloads.level_part import WORKLOAD

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

OPEN_ARRIVALS = ("fixed-rate", "poisson", "gamma", "trace")  # levels matched by offered rate
# What must be the same in every record on both sides (what was sent, how it arrived, what
# counts as good), with the words a reason says it in.
CONDITIONS = {
    LEVEL.model: "model",
    WORKLOAD.workload: "workload",
    LEVEL.prompt_set: "prompt set",
    LEVEL.max_tokens: "max tokens",
    LEVEL.temperature: "temperature",
    LEVEL.arrival: "arrival",
    LEVEL.burstiness: "burstiness",
    LEVEL.duration_s: "level duration",
    LEVEL.slo_ttft_s: "slo ttft s",
    LEVEL.slo_tpot_s: "slo tpot s",
}
# What a record without the field ran with (level records before it was added)
# (the headless Locust run writes no arrival: a closed loop)
ABSENT = {WORKLOAD.workload: {"kind": "prompts"}, LEVEL.arrival: "closed"}
GATE_CHANCE = 0.05  # the most chance the rank test may leave that a difference is noise


@dataclass(frozen=True)
class GateMetric:
    """One gated figure: its name, how it is read from a level record, its unit, and which way is better."""

    name: str
    read: Callable[[dict], float | None]
    unit: str
    higher_better: bool


def _field(figure: Callable[[LevelStats], Any]) -> Callable[[dict], float | None]:
    """A gate metric's reader: one figure of the level's typed measured part, None where absent."""

    def read(rec: dict) -> float | None:
        value = figure(LevelStats.read(rec))
        return None if value is None else float(value)

    return read


def _failed_share(rec: dict) -> float | None:
    asked = rec.get(STATS.requests) or 0
    return rec.get(STATS.failed, 0) / asked if asked else None


GATE_METRICS = (
    GateMetric("output tok/s", _field(lambda s: s.output_tokens_per_s), "tok/s", True),
    GateMetric("goodput", _field(lambda s: s.goodput_requests_per_s), "req/s", True),
    GateMetric("failed share", _failed_share, "", False),
    GateMetric("TTFT p95", _field(lambda s: s.ttft_s.p95), "s", False),
    GateMetric("TPOT p50", _field(lambda s: s.tpot_s.p50), "s", False),
    GateMetric("ITL p50", _field(lambda s: s.itl_s.p50), "s", False),
    GateMetric("end-to-end p95", _field(lambda s: s.e2e_s.p95), "s", False),
)
# Tails over every token gap (ITL p99) move with the load machine's own scheduling from one sweep to
# the next (14.6 % between two sweeps of one practice server on a shared 2-core machine), far more
# than the runs within a sweep show, so the gate reads the median gap; the tables show the tails.


def level_key(rec: dict) -> float:
    """The offered load a record measured: its crowd (closed loop), or its arrival rate (open loop,
    trace). KeyError for an open-loop record without its rate."""
    way = Arrival.read(rec)
    if way and way.kind in OPEN_ARRIVALS:
        if way.rate_rps is None:
            raise KeyError(LEVEL.rate_rps)
        return round(float(way.rate_rps), 6)
    return int(LevelStats.read(rec).concurrency)


def arrival_of(rec: dict) -> str | None:
    """How a level's requests arrived (``closed``, ``poisson``, ...), None on lines that do not say."""
    way = Arrival.read(rec)
    return way.kind if way else None


def level_name(key: float, arrival: str | None) -> str:
    return f"{key:g} req/s" if arrival in OPEN_ARRIVALS else f"c={key:g}"


def by_level(records: list[dict]) -> dict[float, list[dict]]:
    """The records of one side per offered level (``level_key``), every run of a level kept."""
    out: dict[float, list[dict]] = {}
    for rec in records:
        out.setdefault(level_key(rec), []).append(rec)
    return out


def _said(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, dict):
        return safe_text(json.dumps(value, sort_keys=True), 120)
    return safe_text(value, 120)


def _values(records: list[dict], name: str) -> list[str]:
    """The distinct values of condition ``name`` over ``records`` (as comparable text), in order."""
    seen: list[str] = []
    for rec in records:
        text = json.dumps(rec.get(name, ABSENT.get(name)), sort_keys=True, default=str)
        if text not in seen:
            seen.append(text)
    return seen


def unlike(
    base: list[dict], cand: list[dict], sides: tuple[str, str] = ("the baseline", "the candidate")
) -> str | None:
    """Why the two sides did not run alike (a condition that differs, within a side or between
    them), or None; ``sides`` names them in the reason (``harness compare`` names its runs)."""
    for name, words in CONDITIONS.items():
        for side, recs in zip(sides, (base, cand), strict=True):
            found = _values(recs, name)
            if len(found) > 1:
                shown = " and ".join(_said(json.loads(v)) for v in found[:2])
                return f"{side} mixes runs: its {words} is {shown} in different records"
        x, y = _values(base, name), _values(cand, name)
        if x != y:
            return (
                f"different conditions: {words} is {_said(json.loads(x[0]))} in {sides[0]} and "
                f"{_said(json.loads(y[0]))} in {sides[1]}"
            )
    return None


def undecidable(base: dict[float, list[dict]], cand: dict[float, list[dict]]) -> str | None:
    """Why the gate cannot compare the two sides at all, or None: nothing on a side, other
    conditions, or other levels (both must measure the same offered loads)."""
    if not base or not cand:
        return f"the {'baseline' if not base else 'candidate'} holds no level record to compare"
    flat_b = [r for recs in base.values() for r in recs]
    flat_c = [r for recs in cand.values() for r in recs]
    why = unlike(flat_b, flat_c)
    if why:
        return why
    if set(base) != set(cand):
        arrival = arrival_of(flat_b[0])
        names = [", ".join(level_name(k, arrival) for k in sorted(side)) for side in (base, cand)]
        return (
            f"the levels differ: the baseline measured {names[0]} and the candidate {names[1]}; gate "
            "runs of the same levels (the same --concurrency or --rate)"
        )
    return None


def too_few(base: dict[float, list[dict]], cand: dict[float, list[dict]]) -> str | None:
    """Why the rank test cannot tell a change from noise at some level (fewer than 3 runs a side),
    or None."""
    for key in sorted(base):
        m, n = len(base[key]), len(cand[key])
        if all_worse_chance(m, n) > GATE_CHANCE:
            name = level_name(key, arrival_of(base[key][0]))
            return (
                f"too few repeats at {name}: {m} baseline and {n} candidate run(s); telling a change from "
                f"noise at {1 - GATE_CHANCE:.0%} needs at least 3 of each (sweep --repeat 3)"
            )
    return None


@dataclass(frozen=True)
class GateLine:
    metric: str
    level: str  # the level in words: c=8, or 2 req/s
    base: list[float]
    cand: list[float]
    unit: str
    worse_share: float | None  # candidate median against baseline median, + is worse
    outcome: str  # ok, worse, noise (worse beyond tolerance but inside the noise), absent

    def text(self, tolerance: float) -> str:
        if self.outcome == "absent":
            return f"{self.metric:<15} {self.level:<8} not measured on both sides"
        b, c = median(self.base), median(self.cand)
        spread = (
            f"noise: ranges {min(self.base):.4g}-{max(self.base):.4g} and "
            f"{min(self.cand):.4g}-{max(self.cand):.4g}"
        )
        verdict = {
            "worse": f"WORSE beyond {tolerance:.0%} and the noise",
            "noise": f"worse beyond {tolerance:.0%} but within the noise",
            "ok": "ok",
        }[self.outcome]
        unit = f" {self.unit}" if self.unit else ""
        return (
            f"{self.metric:<15} {self.level:<8} baseline {b:.4g}{unit}, candidate {c:.4g}{unit}, "
            f"{_change(self.worse_share)}; {spread}; {verdict}"
        )


def _change(share: float | None) -> str:
    if share is None:
        return "no change known"
    return f"{share:.1%} worse" if share > 0 else f"{-share:.1%} better" if share < 0 else "no change"


def gate_line(
    metric: GateMetric, level: str, base: list[dict], cand: list[dict], tolerance: float
) -> GateLine:
    """One metric at one level: worse when the candidate's median is worse than the baseline's by
    more than ``tolerance`` and every candidate run is worse than every baseline run (the rank test:
    by chance that happens once in C(m+n, n))."""
    b, c = values(metric, base), values(metric, cand)
    if not b or not c:
        return GateLine(metric.name, level, b, c, metric.unit, None, "absent")
    share = worse_share(metric, b, c)
    outcome = "ok" if share <= tolerance else ("worse" if all_worse(metric, b, c) else "noise")
    return GateLine(metric.name, level, b, c, metric.unit, share, outcome)


def values(metric: GateMetric, records: list[dict]) -> list[float]:
    """The metric in each record that has it (the runs of one level)."""
    return [v for r in records if (v := metric.read(r)) is not None]


def worse_share(metric: GateMetric, base: list[float], cand: list[float]) -> float:
    """How much worse the candidate's median is than the baseline's, as a share of the baseline's
    (negative: better); a zero baseline makes any change all of it (1 or -1)."""
    mb, mc = median(base), median(cand)
    assert mb is not None and mc is not None
    sign = -1 if metric.higher_better else 1
    return sign * (mc - mb) / mb if mb else float(sign * (mc - mb) > 0) - float(sign * (mc - mb) < 0)


def all_worse(metric: GateMetric, base: list[float], cand: list[float]) -> bool:
    """Whether every candidate run is worse than every baseline run (the rank test's event)."""
    return min(cand) > max(base) if not metric.higher_better else max(cand) < min(base)


def lines(base: dict[float, list[dict]], cand: dict[float, list[dict]], tolerance: float) -> list[GateLine]:
    """Every metric at every level (the two sides already comparable: ``undecidable`` is None)."""
    return [
        gate_line(metric, level_name(key, arrival_of(base[key][0])), base[key], cand[key], tolerance)
        for key in sorted(base)
        for metric in GATE_METRICS
    ]


@dataclass(frozen=True)
class Decision:
    """The gate's answer: ``exit_code`` 0 (nothing worse), 1 (something worse beyond the tolerance
    and the noise) or 2 (cannot decide, ``why``), and the lines it read."""

    exit_code: int
    why: str | None
    lines: list[GateLine]


def decide(base: dict[float, list[dict]], cand: dict[float, list[dict]], tolerance: float) -> Decision:
    """Compare, or say why not. Too few repeats matter only where a difference has to be told from
    noise: when every metric is within the tolerance at every level, nothing is worse however few
    the runs (the same run given as both sides passes); when one is beyond it, at least 3 runs a
    side are needed to call it worse."""
    why = undecidable(base, cand)
    if why:
        return Decision(2, why, [])
    found = lines(base, cand, tolerance)
    beyond = [x for x in found if x.outcome in ("worse", "noise")]
    if not beyond:
        return Decision(0, None, found)
    few = too_few(base, cand)
    if few:
        return Decision(2, few, found)
    return Decision(1 if any(x.outcome == "worse" for x in beyond) else 0, None, found)
