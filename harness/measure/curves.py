"""Curve summaries: pure functions over level records (docs/architecture.md, "Definitions").

Scaling = tok/s at c / (c x tok/s per request at the first level). Knee: the first step whose
gain per added request is below half of one request's throughput at the first level. TPOT fit:
least squares TPOT p50 = a + b c over levels at or below the server's slots; ceiling 1/b; c at
the objective = (s - a)/b. Operating point: the highest level with no failures and both p90s
within the objective. Capacity within a promise: the largest level whose p95 TTFT is within it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# open loops' backlog; the engine's /metrics; the lab's rows
from harness.measure import backlog, server_metrics, level_checks as troubleshooting
from harness import lab
from harness.records.base import DEFAULT_SLO_TPOT_S, DEFAULT_SLO_TTFT_S
from harness.records.level import DIST, LEVEL, MERGED, LevelStats, RunMark, STATS, objectives_of

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

BASELINE_LEVELS = tuple(int(c) for c in lab.values("baseline_levels"))  # the serving lab's baseline
DEFAULT_SLO_TTFT, DEFAULT_SLO_TPOT = DEFAULT_SLO_TTFT_S, DEFAULT_SLO_TPOT_S


def by_label(records: list[dict]) -> dict[str, dict[int, dict]]:
    """label -> concurrency -> the most recent record (later lines win). When the most recent
    record is one of several runs of that level by one invocation (``sweep --repeat``, the
    capacity search), the level is those runs merged (``merge_runs``)."""
    runs: dict[str, dict[int, list[dict]]] = {}
    for rec in records:
        level = runs.setdefault(str(rec.get(LEVEL.label)), {}).setdefault(int(rec[STATS.concurrency]), [])
        if level and (not run_id(rec) or run_id(level[-1]) != run_id(rec)):
            level.clear()  # a later run of the level replaces the earlier ones
        level.append(rec)
    return {label: {c: merge_runs(rs) for c, rs in lv.items()} for label, lv in runs.items()}


# The headline figures whose spread over repeated runs a merged level carries.
SPREAD_FIELDS = (
    STATS.output_tokens_per_s,
    STATS.requests_per_s,
    STATS.goodput_requests_per_s,
    STATS.mean_in_flight,
)
SPREAD_DISTS = (STATS.ttft_s, STATS.tpot_s, STATS.itl_s, STATS.e2e_s)
COUNTED = (
    STATS.requests,
    STATS.completed,
    STATS.failed,
    STATS.incomplete,
    STATS.cancelled,
    STATS.within_slo,
    STATS.output_tokens,
)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def merge_runs(runs: list[dict]) -> dict:
    """One level from the R runs of it: the latest record with each headline figure replaced by
    the median of the runs, counts summed (a failure in any run stays a failure), ``runs`` = R,
    and ``spread``: field -> [smallest, largest] over the runs (``ttft_s.p95`` for a percentile).
    A single run is returned as it is."""
    if len(runs) == 1:
        return runs[0]
    out = dict(runs[-1])
    spread: dict[str, list[float]] = {}
    for key in SPREAD_FIELDS:
        values = [r[key] for r in runs if r.get(key) is not None]
        if values:
            out[key] = _median(values)
            spread[key] = [min(values), max(values)]
    for key in SPREAD_DISTS:
        if not isinstance(runs[-1].get(key), dict):
            continue
        dist = dict(runs[-1][key])
        for pct in dist:
            values = [r[key][pct] for r in runs if (r.get(key) or {}).get(pct) is not None]
            dist[pct] = _median(values) if values else None
            if values:
                spread[f"{key}.{pct}"] = [min(values), max(values)]
        out[key] = dist
    for key in COUNTED:
        if all(isinstance(r.get(key), int) for r in runs):
            out[key] = sum(r[key] for r in runs)
    out[MERGED.runs] = len(runs)
    out[MERGED.spread] = spread
    return out


def spread_of(rec: dict, key: str, pct: str | None = None) -> list[float] | None:
    """The [smallest, largest] of a figure over a merged level's runs; None for a single run."""
    return (rec.get(MERGED.spread) or {}).get(f"{key}.{pct}" if pct else key)


def run_id(rec: dict) -> str | None:
    """The id of the run that wrote a level, None on lines from before run ids."""
    mark = RunMark.read(rec)
    return mark.run_id if mark else None


def runs_in(levels: dict[int, dict]) -> dict[str, list[int]]:
    """run id -> the levels of this curve it wrote, for records that carry a run id."""
    out: dict[str, list[int]] = {}
    for c in sorted(levels):
        rid = run_id(levels[c])
        if rid:
            out.setdefault(rid, []).append(c)
    return out


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float] | None:
    """Least squares y = a + b x; None with fewer than two distinct x."""
    if len(set(xs)) < 2:
        return None
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - b * mx, b


@dataclass
class Curve:
    levels: list[int]
    per_request: float | None = None
    scaling: dict | None = None
    knee: tuple[int, int] | None = None
    fit: dict | None = None  # a_s, b_s, levels_used
    fit_note: str | None = None  # why there is no fit although the levels gave a line
    ceiling: float | None = None
    c_at_slo: float | None = None
    operating_point: int | None = None
    slo_ttft: float = DEFAULT_SLO_TTFT
    slo_tpot: float = DEFAULT_SLO_TPOT


def _ttft(rec: dict, pct: str) -> float | None:
    """A level's first-token time at the percentile named (``p90``, ``p95``), None where absent."""
    value: float | None = getattr(LevelStats.read(rec).ttft_s, pct)
    return value


def completed_levels(levels: dict[int, dict]) -> list[int]:
    """Concurrency values whose record finished at least one request, ascending."""
    return sorted(level for level, rec in levels.items() if LevelStats.read(rec).completed)


def cached_share(rec: dict) -> float | None:
    """Mean cached prompt tokens as a share of the mean prompt, or None when either is unknown."""
    st = LevelStats.read(rec)
    cached, prompt = st.cached_tokens_mean, st.prompt_tokens_mean
    return None if cached is None or not prompt else cached / prompt


def curve(levels: dict[int, dict]) -> Curve:
    cs = completed_levels(levels)
    if not cs:
        return Curve(levels=[])
    first = levels[cs[0]]
    d = Curve(
        levels=cs,
        slo_ttft=objectives_of(first).ttft_s,
        slo_tpot=objectives_of(first).tpot_s,
    )
    tput = [LevelStats.read(levels[c]).output_tokens_per_s for c in cs]
    d.per_request = tput[0] / cs[0]
    d.scaling = {
        c: (t / (c * d.per_request) if d.per_request else None) for c, t in zip(cs, tput, strict=True)
    }
    for i in range(1, len(cs)):
        per_added = (tput[i] - tput[i - 1]) / (cs[i] - cs[i - 1])
        if per_added < d.per_request / 2:
            d.knee = (cs[i - 1], cs[i])
            break
    for c in cs:
        st = LevelStats.read(levels[c])
        t90, p90 = st.ttft_s.p90, st.tpot_s.p90
        if st.failed == 0 and t90 is not None and p90 is not None and t90 <= d.slo_ttft and p90 <= d.slo_tpot:
            d.operating_point = c
    slots = first.get(LEVEL.server_slots)
    source = f"given: {slots} server slots"
    if not slots:
        slots, source = infer_slots(levels, cs)
    tpot50 = {
        c: v
        for c in cs
        if (not slots or c <= slots) and (v := LevelStats.read(levels[c]).tpot_s.p50) is not None
    }
    line = fit_line([float(c) for c in tpot50], list(tpot50.values()))
    if line and line[0] < 0:
        # no decode step costs less than nothing: a line through these levels is no model of them
        d.fit_note = (
            f"the fit's base came out negative over c = {', '.join(map(str, tpot50))}: these levels' "
            "TPOT p50 does not follow a + b x c; not used, and no ceiling is read from it"
        )
    elif line:
        a, b = line
        d.fit = {"a_s": a, "b_s": b, "levels_used": list(tpot50), "slots": slots, "slots_source": source}
        if slots and a + b * slots > 0:
            # what the seats can deliver: every seat decoding, each step a + b x seats
            d.fit["seat_ceiling"] = slots / (a + b * slots)
        if b > 0:
            d.ceiling = 1 / b
            d.c_at_slo = (d.slo_tpot - a) / b
    return d


PLATEAU_GAIN = 0.10  # a later level adding less than this share of throughput is on the plateau


def infer_slots(levels: dict[int, dict], cs: list[int]) -> tuple[int | None, str]:
    """When the seat count is not given: the level where output throughput stops growing (the
    first level that every later level beats by less than ``PLATEAU_GAIN``), so the TPOT fit never
    reaches past the plateau, where requests queue for a seat instead of sharing decode steps.
    Returns the level (None when throughput grows to the last level) and how it was found."""
    tput = {c: LevelStats.read(levels[c]).output_tokens_per_s for c in cs}
    for i, c in enumerate(cs[:-1]):
        if tput[c] > 0 and all(tput[later] < tput[c] * (1 + PLATEAU_GAIN) for later in cs[i + 1 :]):
            return c, (
                f"inferred from throughput: flat from c={c} ({tput[c]:.1f} tok/s; every later level "
                f"within {PLATEAU_GAIN:.0%}), so about {c} seats (--server-slots states it)"
            )
    return None, "not given and no throughput plateau in these levels: every level used"


@dataclass(frozen=True)
class CapacityReading:
    """Capacity within a promise read off the listed levels, never more than they show: ``exact``
    (the next level up was measured and broke it), ``at least`` (the top level measured kept it, or
    levels between it and the first that broke it were not measured) or ``none``."""

    capacity: int | None
    reading: str
    text: str


def _kept(rec: dict, promise_s: float, pct: str) -> bool:
    st, ttft = LevelStats.read(rec), _ttft(rec, pct)
    return bool(st.completed) and st.failed == 0 and ttft is not None and ttft <= promise_s


def capacity_reading(levels: dict[int, dict], promise_s: float, pct: str = DIST.p95) -> CapacityReading:
    """The largest level below the first one that breaks the promise (any failure breaks it);
    levels without that percentile (the lab's own records have no p95) are not judged."""
    cs = sorted(c for c, r in levels.items() if _ttft(r, pct) is not None or not LevelStats.read(r).completed)
    if not cs:
        return CapacityReading(None, "none", f"no level has a {pct} first-token time to judge")
    broke = next((c for c in cs if not _kept(levels[c], promise_s, pct)), None)
    kept = [c for c in cs if broke is None or c < broke]
    if not kept:
        if broke == 1:
            return CapacityReading(None, "none", "none: one person at a time already breaks it")
        return CapacityReading(
            None, "none", f"none measured: the first level, c={broke}, breaks it (fewer were not tried)"
        )
    top = kept[-1]
    if broke is None:
        return CapacityReading(
            top, "at least", f"at least {top} at once (the top level measured kept it; more were not tried)"
        )
    if broke == top + 1:
        return CapacityReading(top, "exact", f"{top} at once ({broke} breaks it)")
    return CapacityReading(
        top,
        "at least",
        f"at least {top} at once and fewer than {broke} (the levels between were not measured; "
        "harness capacity finds it)",
    )


def capacity_within(levels: dict[int, dict], promise_s: float, pct: str = DIST.p95) -> int | None:
    """The largest level with no failures whose TTFT percentile is within the promise."""
    ok = [
        c
        for c, r in levels.items()
        if (st := LevelStats.read(r)).completed
        and st.failed == 0
        and (ttft := _ttft(r, pct)) is not None
        and ttft <= promise_s
    ]
    return max(ok) if ok else None


def copies_for(peak: int, capacity: int, spare_share: float = 0.2) -> tuple[int, int]:
    """Copies of the server a peak crowd needs, and that number with spares added."""
    if capacity < 1:
        raise ValueError("capacity must be at least 1")
    need = math.ceil(peak / capacity)
    return need, math.ceil(need * (1 + spare_share))


Finding = tuple[str, str]


def _rule(passed: bool, finding: str, severity: str = "FAIL") -> Finding:
    return ("PASS" if passed else severity, finding)


def _baseline_rules(labels: dict[str, dict[int, dict]], required: bool = True) -> list[Finding]:
    """A complete mixed-prompt baseline, without failures, counted from usage, conditions stated;
    its absence a failure only where the lab's sweeps are ``required``."""
    need = set(BASELINE_LEVELS)
    baselines = [
        name
        for name, lv in labels.items()
        if need <= set(lv)
        and all(LevelStats.read(lv[c]).completed for c in need)
        and lv[1].get(LEVEL.prompt_set) == "mixed"
    ]
    found = [
        _rule(
            bool(baselines),
            f"baseline sweep (mixed prompts, every level of {', '.join(map(str, sorted(need)))} completed): "
            f"{', '.join(baselines) or 'none found'}",
        )
    ][: 1 if required or baselines else 0]
    for name in baselines:
        recs = labels[name].values()
        failures = sum(LevelStats.read(r).failed for r in recs)
        absent = [
            k
            for k in (LEVEL.host, LEVEL.quant, LEVEL.context_length, LEVEL.server_slots)
            if labels[name][1].get(k) in (None, "unknown")
        ]
        found += [
            _rule(failures == 0, f"{name}: {failures} failed request(s) across its levels", "WARN"),
            _rule(
                all(r.get(STATS.token_counts) == "usage" for r in recs),
                f"{name}: every level took its token counts from the usage block",
                "WARN",
            ),
            _rule(
                not absent,
                f"{name}: test conditions recorded" + (f" except {', '.join(absent)}" if absent else ""),
                "WARN",
            ),
        ]
    return found


def _client_rules(labels: dict[str, dict[int, dict]]) -> list[Finding]:
    """Honest numbers: a level whose client was the limit measured the client (our records only;
    the lab's own load generator does not write the field)."""
    found = []
    for name, lv in labels.items():
        judged = {c: r[LEVEL.client_limited] for c, r in lv.items() if LEVEL.client_limited in r}
        if not judged:
            continue
        limited = [c for c, flag in sorted(judged.items()) if flag]
        finding = (
            f"{name}: the client was the limit at c={', '.join(map(str, limited))}; rerun those levels "
            "with --processes or from another machine"
            if limited
            else f"{name}: the client kept up at every level"
        )
        found.append(_rule(not limited, finding, "WARN"))
    return found


def _prefix_rules(labels: dict[str, dict[int, dict]], required: bool = True) -> list[Finding]:
    """The prefix pair: the shared set mostly served from cache, the control set not; a missing pair a
    failure only where the lab's sweeps are ``required``."""

    def labels_using(prompt_set: str) -> list[str]:
        return [
            n for n, lv in labels.items() if any(r.get(LEVEL.prompt_set) == prompt_set for r in lv.values())
        ]

    shared, control = labels_using("shared-prefix"), labels_using("unique-prefix")
    found = [
        _rule(
            bool(shared and control),
            f"prefix pair: shared: {', '.join(shared) or 'missing'}; "
            f"control: {', '.join(control) or 'missing'}",
        )
    ][: 1 if required or shared or control else 0]
    for name in shared:
        for c, rec in sorted(labels[name].items()):
            share = cached_share(rec)
            if share is None:
                found.append(
                    _rule(False, f"{name} at c={c}: no cached-token count came back from the server", "WARN")
                )
            else:
                found.append(
                    _rule(
                        share > 0.5,
                        f"{name} at c={c}: {share:.0%} of the prompt was served from cache (needs > 50 %)",
                    )
                )
    for name in control:
        for c, rec in sorted(labels[name].items()):
            share = cached_share(rec)
            if share is not None:
                found.append(
                    _rule(
                        share < 0.1,
                        f"{name} at c={c}: {share:.0%} of the prompt was served from cache (control, needs < "
                        "10 %)",
                    )
                )
    return found


def check(
    labels: dict[str, dict[int, dict]], load_errors: list[dict] | None = None, lab_sweeps: bool = True
) -> list[Finding]:
    """The lab's validation rules, as (PASS | WARN | FAIL, finding) pairs; ``load_errors`` are the
    troubleshooting rows a level's first error is matched against (``data/diagnoses.yaml``).
    ``lab_sweeps`` False (a plan that is not the serving lab, such as Day 3's crowds): a missing
    1, 5, 10, 20 baseline or prefix pair is not a finding; the rules for those present still run."""
    return (
        _baseline_rules(labels, lab_sweeps)
        + _client_rules(labels)
        + backlog.rules(labels)
        + _prefix_rules(labels, lab_sweeps)
        + server_metrics.rules(labels)
        + troubleshooting.rules(labels, load_errors)
    )
