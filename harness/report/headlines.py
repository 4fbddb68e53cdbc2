"""The run report's headline numbers, one row per curve: the peak, the knee, the operating point,
the capacity within the promise, the admission outcome and what prefix caching was worth, and the
one-line text of each. Pure: records in, rows and words out (``harness.report.run_report`` draws
them; ``harness track`` prints them at the end of a run)."""

from __future__ import annotations

from harness.measure import curves
from harness.records.sizing import Capacity
from harness.records.level import DIST, LEVEL, STATS, LevelStats
from harness.report.curve_tables import said
from harness.schema_facts import KeyNames

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


def _ttft(rec: dict | None, pct: str) -> float | None:
    """A level's first-token time at the percentile named, None where absent."""
    value: float | None = None if rec is None else getattr(LevelStats.read(rec).ttft_s, pct)
    return value


# A headline row's keys (``headlines``) and its prefix pair's (``prefix_change``): every reader takes
# them from here.
ROW = KeyNames(
    "label",
    "engine",
    "peak_tok_s",
    "peak_range",
    "knee",
    "operating_point",
    "operating_is_top",
    "capacity",
    "admission",
    "prefix",
)
PREFIX = KeyNames("c", "ttft_unique_s", "ttft_shared_s", "change", "cached_share")


def prefix_change(unique: dict[int, dict], shared: dict[int, dict]) -> dict | None:
    """TTFT p50 without and with a shared prefix at the lowest level both ran, and the cached share."""
    both = sorted(set(unique) & set(shared))
    if not both:
        return None
    c = both[0]
    before, after = _ttft(unique[c], DIST.p50), _ttft(shared[c], DIST.p50)
    if before is None or after is None:
        return None
    return {
        PREFIX.c: c,
        PREFIX.ttft_unique_s: before,
        PREFIX.ttft_shared_s: after,
        PREFIX.change: (after - before) / before if before else None,
        PREFIX.cached_share: curves.cached_share(shared[c]),
    }


def headlines(
    levels_by_label: dict[str, dict[int, dict]],
    curve_labels: list[str],
    pairs: dict[str, tuple[str, str]],
    promise_s: float,
    admissions: dict[str, str] | None = None,
    searches: dict[str, Capacity] | None = None,
) -> list[dict]:
    """One row per curve: peak output tokens/s (and its range when that level was repeated), knee,
    operating point, capacity within the promise as the levels show it (exact, at least, none),
    the admission level's outcome against the promise, and the prefix-caching TTFT change of the
    pair run on the same server."""
    rows = []
    for label in curve_labels:
        levels = levels_by_label.get(label)
        if not levels:
            continue
        d = curves.curve(levels)
        if not d.levels:
            continue
        first = levels[d.levels[0]]
        pair = pairs.get(label)
        change = (
            prefix_change(levels_by_label.get(pair[0], {}), levels_by_label.get(pair[1], {}))
            if pair
            else None
        )
        peak_c = max(d.levels, key=lambda c: LevelStats.read(levels[c]).output_tokens_per_s)
        admitted = (admissions or {}).get(label)
        rows.append(
            {
                ROW.label: label,
                ROW.engine: first.get(LEVEL.engine),
                ROW.peak_tok_s: LevelStats.read(levels[peak_c]).output_tokens_per_s,
                ROW.peak_range: curves.spread_of(levels[peak_c], STATS.output_tokens_per_s),
                ROW.knee: f"{d.knee[0]}->{d.knee[1]}" if d.knee else "none",
                ROW.operating_point: d.operating_point,
                ROW.operating_is_top: d.operating_point == d.levels[-1],
                ROW.capacity: curves.capacity_reading(levels, promise_s),
                ROW.admission: admission_outcome(
                    levels_by_label.get(admitted, {}), promise_s, (searches or {}).get(admitted)
                )
                if admitted
                else None,
                ROW.prefix: change,
            }
        )
    return rows


def admission_outcome(levels: dict[int, dict], promise_s: float, search: Capacity | None = None) -> str:
    """The admission level's outcome in words: its crowd, p95 TTFT against the promise and by how
    much, and how many requests met the goodput objective; why not, when it did not run. When the
    level was found by ``harness capacity`` (``search``), that level and the search's answer."""
    done = curves.completed_levels(levels)
    if not done:
        return "not run"
    c = done[-1]
    if search is not None:
        if search.capacity is None or search.capacity not in levels:
            return f"capacity search: {search.answer}"
        c = search.capacity
    rec, st = levels[c], LevelStats.read(levels[c])
    p95 = st.ttft_s.p95
    if p95 is None:
        verdict = "no p95 TTFT measured"
    elif p95 <= promise_s and not st.failed:
        verdict = (
            f"within the {promise_s:g} s promise (p95 TTFT {p95:.2f} s, {promise_s - p95:.2f} s to spare)"
        )
    else:
        over = (
            f"p95 TTFT {p95:.2f} s, {p95 - promise_s:.2f} s over"
            if p95 > promise_s
            else f"p95 TTFT {p95:.2f} s"
        )
        failed = f", {st.failed} failed" if st.failed else ""
        verdict = f"breaks the {promise_s:g} s promise ({over}{failed})"
    prompts = f" ({rec[LEVEL.prompt_set]})" if rec.get(LEVEL.prompt_set) else ""
    good = f"{st.within_slo or 0}/{st.completed}"
    found = f" (capacity search: {search.answer})" if search else ""
    return f"c={c}{prompts}{found}: {verdict}; {good} within the goodput objective"


def peak_text(r: dict) -> str:
    span = r.get(ROW.peak_range)
    return f"{r[ROW.peak_tok_s]:.1f}" + (f" (range {span[0]:.1f}-{span[1]:.1f})" if span else "")


def operating_text(r: dict) -> str:
    if not r[ROW.operating_point]:
        return "none"
    return f"c={r[ROW.operating_point]}" + (" (top level measured)" if r[ROW.operating_is_top] else "")


def prefix_text(pre: dict | None) -> str:
    """The prefix pair's effect in words: TTFT p50 without and with the shared prefix, the change
    and the cached share (each only where it was measured)."""
    if pre is None:
        return "no prefix pair in this run"
    text = f"{pre[PREFIX.ttft_unique_s]:.3f} -> {pre[PREFIX.ttft_shared_s]:.3f} s at c={pre[PREFIX.c]}"
    notes = [f"{pre[PREFIX.change]:+.0%}"] if pre[PREFIX.change] is not None else []
    if pre[PREFIX.cached_share] is not None:
        notes.append(f"{pre[PREFIX.cached_share]:.0%} of the prompt cached")
    return text + (f" ({', '.join(notes)})" if notes else "")


def headline_lines(rows: list[dict], promise_s: float) -> list[str]:
    """The headline rows as the lines ``harness track`` prints at the end of a run."""
    return [
        f"{r[ROW.label]} ({said(r[ROW.engine])}): peak {peak_text(r)} tok/s, knee {r[ROW.knee]}, "
        f"operating point {operating_text(r)}, "
        f"capacity within the promise of {promise_s:g} s p95 TTFT: {r[ROW.capacity].text}; "
        + (f"admission {r[ROW.admission]}; " if r.get(ROW.admission) else "")
        + "prefix caching: "
        + ("no pair" if r[ROW.prefix] is None else f"TTFT p50 {prefix_text(r[ROW.prefix])}")
        for r in rows
    ]
