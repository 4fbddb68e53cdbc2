"""The figures a comparison shows: one headline row per run, and each figure of a run against its
set's reference at every level both measured, with a difference called only beyond the runs' own
spread. The calls are the regression gate's statistics (``harness.sizing.gate``): the medians apart by
more than the tolerance, every run of one side beyond every run of the other, and enough runs for
that to happen by chance at most 1 time in 20. Pure: runs in, rows and calls out."""

from __future__ import annotations

from dataclasses import dataclass

from harness.compare.sets import Run, RunSet, identity
from harness.measure import curves
from harness.sizing import gate
from harness.energy.record_part import ENERGY
from harness.records.level import LEVEL, LevelStats, objectives_of
from harness.measure.stats import all_worse_chance, median
from harness.report.headlines import ROW, headlines, operating_text, peak_text

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

CALLED = ("better", "worse")  # the verdicts that call a difference


def promise_of(run: Run, promise_s: float | None) -> float:
    """The promise a run's capacity is read against: the one given, else its own TTFT objective."""
    return promise_s if promise_s is not None else objectives_of(run.records[0]).ttft_s


def matching_level(runs: list[Run]) -> int | None:
    """The largest crowd every run of a set completed (None when they share none)."""
    shared = None
    for run in runs:
        done = set(curves.completed_levels(run.levels()))
        shared = done if shared is None else shared & done
    return max(shared) if shared else None


@dataclass(frozen=True)
class Headline:
    """One run's headline figures; ``at`` is its set's matching level, where the latencies and the
    energy are read."""

    run: str
    set_no: int
    identity: dict[str, str]
    peak: str
    knee: str
    operating_point: str
    capacity: str
    promise_s: float
    at: int | None
    ttft_p95_s: float | None
    tpot_p50_s: float | None
    j_per_token: float | None
    energy_note: str


def _energy(rec: dict | None) -> tuple[float | None, str]:
    """J per output token at a level, and what stands for it when it was not measured."""
    e = (rec or {}).get(LEVEL.energy) or {}
    value = e.get(ENERGY.j_per_output_token)
    if value is not None:
        return value, f" ({e[ENERGY.label]})" if e.get(ENERGY.label) else ""
    return None, "not measured"


def headline_rows(found: list[RunSet], promise_s: float | None) -> list[Headline]:
    """One row per run, set by set: the run report's headline figures (``headlines``) and, at its
    set's matching level, TTFT p95, TPOT p50 and J per output token."""
    rows = []
    for no, group in enumerate(found, 1):
        at = matching_level(group.runs)
        for run in group.runs:
            levels, promise = run.levels(), promise_of(run, promise_s)
            top = headlines({run.name: levels}, [run.name], {}, promise)
            rec = levels.get(at) if at is not None else None
            st = LevelStats.read(rec) if rec else None
            joules, note = _energy(rec)
            rows.append(
                Headline(
                    run=run.name,
                    set_no=no,
                    identity=identity(run),
                    peak=peak_text(top[0]) if top else "no level completed",
                    knee=top[0][ROW.knee] if top else "-",
                    operating_point=operating_text(top[0]) if top else "none",
                    capacity=top[0][ROW.capacity].text if top else "none",
                    promise_s=promise,
                    at=at,
                    ttft_p95_s=st.ttft_s.p95 if st else None,
                    tpot_p50_s=st.tpot_s.p50 if st else None,
                    j_per_token=joules,
                    energy_note=note,
                )
            )
    return rows


@dataclass(frozen=True)
class Call:
    """One figure of a run against its reference at one level: the runs' values on each side, the
    change of the medians (a share of the reference's, + worse), and the verdict: ``better`` or
    ``worse`` (called), ``within tolerance``, ``within the spread``, ``too few runs`` (apart, but
    too few runs to tell from chance) or ``not measured``."""

    run: str
    reference: str
    level: str
    metric: str
    unit: str
    ref_values: list[float]
    values: list[float]
    change: float | None
    verdict: str

    def text(self) -> str:
        """The call in words, with both medians and how many runs each is of."""
        if self.verdict == "not measured":
            return f"{self.metric} at {self.level}: not measured on both sides"
        unit = f" {self.unit}" if self.unit else ""
        a, b = median(self.ref_values), median(self.values)
        assert self.change is not None
        moved = f"{-self.change:.1%} better" if self.change < 0 else f"{self.change:.1%} worse"
        said = "called" if self.verdict in CALLED else f"not called: {self.verdict}"
        return (
            f"{self.metric} at {self.level}: {b:.4g}{unit} ({len(self.values)} run(s)) against "
            f"{a:.4g}{unit} ({len(self.ref_values)} run(s)), {moved}, {said}"
        )


def verdict(metric: gate.GateMetric, base: list[float], cand: list[float], tolerance: float) -> str:
    """The gate's test in both directions: a change beyond ``tolerance`` with every run of one side
    beyond every run of the other, and runs enough (``GATE_CHANCE``), is called better or worse."""
    if not base or not cand:
        return "not measured"
    share = gate.worse_share(metric, base, cand)
    if abs(share) <= tolerance:
        return "within tolerance"
    worse = share > 0
    apart = gate.all_worse(metric, base, cand) if worse else gate.all_worse(metric, cand, base)
    if not apart:
        return "within the spread"
    if all_worse_chance(len(base), len(cand)) > gate.GATE_CHANCE:
        return "too few runs"
    return "worse" if worse else "better"


def calls(reference: Run, run: Run, tolerance: float) -> list[Call]:
    """Every gated figure of ``run`` against ``reference`` at each level both measured."""
    ref, mine = reference.by_level(), run.by_level()
    out = []
    for key in sorted(set(ref) & set(mine)):
        level = gate.level_name(key, gate.arrival_of(ref[key][0]))
        for metric in gate.GATE_METRICS:
            b, c = gate.values(metric, ref[key]), gate.values(metric, mine[key])
            change = gate.worse_share(metric, b, c) if b and c else None
            out.append(
                Call(
                    run.name,
                    reference.name,
                    level,
                    metric.name,
                    metric.unit,
                    b,
                    c,
                    change,
                    verdict(metric, b, c, tolerance),
                )
            )
    return out
