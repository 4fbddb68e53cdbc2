"""The admission recommendation (the serving lab's last sizing step: "choose an admission level below
the unacceptable region and repeat a mixed short/long request workload ... keep the resulting
admission recommendation"), pure: from the source curve's levels, the admission run's levels and,
when the level was found by ``harness capacity``, its record.

The level is the source curve's operating point (the highest level with no failures and both p90s
within the objective), or the capacity the search found. The unacceptable region starts at the
first measured level above it that broke the objective. The recommendation holds when the
admission run at that level, on its own workload, kept the same objective (``recommended``); it
is ``not confirmed`` when that run broke it, ``unconfirmed`` when no admission run was recorded,
and ``none`` when no level qualified.
"""

from __future__ import annotations

from harness.measure import curves
from harness.records.base import machine_of
from harness.records.sizing import AdmissionRecommendation, AdmissionRun, Capacity, Confirmed, Objective
from harness.records.level import DIST, LEVEL, STATS, LevelStats

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

PCT_OF = {"ttft": STATS.ttft_s, "tpot": STATS.tpot_s, "itl": STATS.itl_s, "e2e": STATS.e2e_s}


def operating_objective(levels: dict[int, dict]) -> Objective:
    """The goodput objective the operating point is chosen by, as limits on level fields."""
    d = curves.curve(levels)
    return Objective(
        f"TTFT p90 <= {d.slo_ttft:g} s and TPOT p90 <= {d.slo_tpot:g} s, no failed request",
        {f"{STATS.ttft_s}.{DIST.p90}": d.slo_ttft, f"{STATS.tpot_s}.{DIST.p90}": d.slo_tpot},
    )


def search_objective(capacity: Capacity) -> Objective:
    """The criterion a capacity search kept (``p95 TTFT <= 2 s``), as limits where it is a latency."""
    crit = capacity.criterion
    if crit is None:
        return Objective("the search's criterion", {})
    key = PCT_OF.get(str(crit.metric))
    limits = {f"{key}.{crit.percentile}": float(crit.limit)} if key and crit.percentile else {}
    return Objective(str(crit.text or "the search's criterion"), limits)


def broken(rec: dict, objective: Objective) -> str | None:
    """How a level broke the objective (``TTFT p90 2.41 s > 2 s``), or None when it kept it."""
    failed = rec.get(STATS.failed)
    if failed:
        return f"{failed} failed request(s)"
    for key, limit in objective.limits.items():
        field, pct = key.split(".")
        value = (rec.get(field) or {}).get(pct)
        name = f"{field.removesuffix('_s').upper()} {pct}"
        if value is None:
            return f"no {name} measured"
        if value > limit:
            return f"{name} {value:.3g} s > {limit:g} s"
    return None


def _first_broken_above(levels: dict[int, dict], level: int | None, objective: Objective) -> tuple:
    for c in curves.completed_levels(levels):
        if (level is None or c > level) and (why := broken(levels[c], objective)):
            return c, why
    return None, None


def _confirmed(admitted: dict[int, dict], level: int | None, objective: Objective) -> Confirmed | None:
    rec = admitted.get(level) if level is not None else None
    st = LevelStats.read(rec) if rec else None
    if level is None or not rec or not st or not st.completed:
        return None
    why = broken(rec, objective)
    return Confirmed(
        concurrency=level,
        prompt_set=rec.get(LEVEL.prompt_set),
        completed=st.completed,
        failed=st.failed or 0,
        ttft_p90_s=st.ttft_s.p90,
        ttft_p95_s=st.ttft_s.p95,
        tpot_p90_s=st.tpot_s.p90,
        within_objective=why is None,
        broken=why,
    )


def _sentence(
    source: str, level: int | None, verdict: str, confirmed: Confirmed | None, why: str, top: bool
) -> str:
    if level is None:
        return f"no admission level for {source}: {why}"
    head = f"admit at most {level} request(s) at once on the server {source} measured"
    if top:
        head += " (its top level: nothing above it was measured, so the limit may be higher)"
    if confirmed is None:
        return f"{head}; no admission run at that level was recorded to confirm it"
    if verdict == "recommended":
        return f"{head}; the {confirmed.prompt_set} workload there kept the objective"
    return (
        f"{head} only with care: the {confirmed.prompt_set} workload there broke the objective "
        f"({confirmed.broken}); choose a lower level"
    )


def recommend(
    label: str,
    source: str,
    source_levels: dict[int, dict],
    admitted: dict[int, dict],
    level: int | None,
    why: str,
    recorded_at: str,
    capacity: Capacity | None = None,
) -> AdmissionRecommendation:
    """The admission record for the level chosen from ``source`` (None: no level qualified, and
    ``why``); with ``capacity``, the level a search found (its ``capacity``) and its criterion."""
    if capacity is not None:
        objective, method = search_objective(capacity), "capacity search"
        level = capacity.capacity
        why = f"capacity search: {capacity.answer}"
    else:
        objective, method = operating_objective(source_levels), "operating point"
    above, above_why = _first_broken_above(source_levels, level, objective)
    confirmed = _confirmed(admitted, level, objective)
    if level is None:
        verdict = "none"
    elif confirmed is None:
        verdict = "unconfirmed"
    else:
        verdict = "recommended" if confirmed.within_objective else "not confirmed"
    done = curves.completed_levels(source_levels)
    first = source_levels[done[0]] if done else {}
    return AdmissionRecommendation(
        label=label,
        source=source,
        run=AdmissionRun.of(first),
        method=method,
        objective=objective,
        source_levels=done,
        level=level,
        unacceptable_from=above,
        unacceptable_why=above_why,
        confirmed=confirmed,
        verdict=verdict,
        recommendation=_sentence(
            source, level, verdict, confirmed, why, top=bool(done) and level == done[-1] and above is None
        ),
        why=why,
        recorded_at=recorded_at,
        machine=machine_of(first),
    )


def line(rec: AdmissionRecommendation) -> str:
    """One admission record in a line: the recommendation, and where the unacceptable region begins."""
    region = (
        f"; unacceptable from c={rec.unacceptable_from} ({rec.unacceptable_why})"
        if rec.unacceptable_from
        else ""
    )
    objective = rec.objective.text if rec.objective is not None else "no objective"
    return f"{rec.label}: {rec.recommendation} [{rec.method}, {objective}]{region}"


def rules(records: list[dict]) -> list[tuple[str, str]]:
    """The check's lines: the latest recommendation per admission label, PASS when recommended and
    confirmed, WARN otherwise (the lab asks for one, but a busy machine may have none to give)."""
    latest = {r.label: r for r in map(AdmissionRecommendation.read, records)}
    return [("PASS" if r.verdict == "recommended" else "WARN", line(r)) for r in latest.values()]
