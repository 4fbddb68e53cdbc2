"""A curve's table, its findings in words, and a level-by-level comparison, from level records only.

``harness summarise`` prints them on a terminal and the run report writes them as Markdown, so the
two say the same thing in the same words. Every function here is pure: records in, cells and
sentences out (``-`` where a figure is absent)."""

from __future__ import annotations

from harness.measure import curves
from harness.sizing import criterion as sizing
from harness.records.base import SPREAD
from harness.records.level import DIST, LEVEL, MERGED, STATS, LevelStats

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

CURVE_HEAD = [
    "c",
    "ok",
    "out tok/s",
    "scaling",
    "req/s",
    "goodput (req/s)",
    "TTFT p50 (s)",
    "TTFT p90 (s)",
    "TTFT p95 (s)",
    "TTFT p99 (s)",
    "TPOT p50 (s)",
    "TPOT p90 (s)",
    "ITL p50 (s)",
    "ITL p99 (s)",
    "e2e p50 (s)",
    "e2e p99 (s)",
    "in flight",
    "cached (tok)",
]
COMPARE_HEAD = [
    "c",
    "out tok/s A",
    "out tok/s B",
    "B/A",
    "goodput A (req/s)",
    "goodput B (req/s)",
    "TTFT p50 A (s)",
    "TTFT p50 B (s)",
    "TTFT p90 A (s)",
    "TTFT p90 B (s)",
    "TPOT p50 A (s)",
    "TPOT p50 B (s)",
    "cached A (tok)",
    "cached B (tok)",
]
# Conditions a level-by-level comparison assumes equal; any difference is stated above the table.
CONDITIONS = (
    LEVEL.engine,
    LEVEL.model,
    LEVEL.quant,
    LEVEL.prompt_set,
    LEVEL.max_tokens,
    LEVEL.context_length,
    LEVEL.server_slots,
)
_UNSTATED = (None, "", 0, "unknown")


def f(value, spec: str) -> str:
    """``value`` formatted, or ``-`` when it was not measured."""
    return "-" if value is None else format(value, spec)


def said(value) -> str:
    """A recorded condition as a person reads it: the value, or that it was not stated."""
    return "not stated" if value in _UNSTATED else str(value)


def conditions_lines(label: str, levels: dict[int, dict], d: curves.Curve) -> list[str]:
    """What was measured and under which conditions: the two lines above a curve's table."""
    head = levels[d.levels[0]]
    stated = ", ".join(
        f"{k.replace('_', ' ')} {head[k]}"
        for k in (LEVEL.engine, LEVEL.engine_version, LEVEL.model, LEVEL.quant, LEVEL.host)
        if head.get(k) not in _UNSTATED
    )
    context = head.get(LEVEL.context_length)
    slots = head.get(LEVEL.server_slots)
    return [
        f"curve for {label}" + (f" ({stated})" if stated else ""),
        f"prompts {said(head.get(LEVEL.prompt_set))}, up to {said(head.get(LEVEL.max_tokens))} tokens out, "
        f"context {context if context not in _UNSTATED else 'not stated (--context-length)'}, "
        f"slots {slots if slots not in _UNSTATED else 'not stated (--server-slots)'}; "
        f"goodput objective (per request, for goodput and the operating point): TTFT <= {d.slo_ttft} s "
        f"and TPOT <= {d.slo_tpot} s",
    ]


def with_spread(rec: dict, key: str, pct: str | None, spec: str) -> str:
    """A figure, and after it the range of its runs when the level was run more than once."""
    value = rec.get(key) if pct is None else (rec.get(key) or {}).get(pct)
    text = f(value, spec)
    low_high = curves.spread_of(rec, key, pct)
    if value is None or not low_high:
        return text
    return f"{text} ({format(low_high[0], spec)}-{format(low_high[1], spec)})"


def curve_rows(d: curves.Curve, levels: dict[int, dict]) -> list[list[str]]:
    """One row per completed level, in the order of ``CURVE_HEAD``; a level run R times shows the
    median of its runs with their range in brackets, and its ``ok`` counts every run's requests."""
    rows = []
    for c in d.levels:
        r, st = levels[c], LevelStats.read(levels[c])
        runs = f" ({r[MERGED.runs]} runs)" if r.get(MERGED.runs, 1) > 1 else ""
        rows.append(
            [
                str(c),
                f"{st.completed}/{st.requests}{runs}",
                with_spread(r, STATS.output_tokens_per_s, None, ".1f"),
                f(d.scaling[c] if d.scaling else None, ".2f"),
                f(st.requests_per_s, ".3f"),
                with_spread(r, STATS.goodput_requests_per_s, None, ".3f"),
                f(st.ttft_s.p50, ".3f"),
                f(st.ttft_s.p90, ".3f"),
                with_spread(r, STATS.ttft_s, DIST.p95, ".3f"),
                f(st.ttft_s.p99, ".3f"),
                with_spread(r, STATS.tpot_s, DIST.p50, ".4f"),
                f(st.tpot_s.p90, ".4f"),
                f(st.itl_s.p50, ".4f"),
                f(st.itl_s.p99, ".4f"),
                f(st.e2e_s.p50, ".3f"),
                f(st.e2e_s.p99, ".3f"),
                f(st.mean_in_flight, ".1f"),
                f(st.cached_tokens_mean, ".1f"),
            ]
        )
    return rows


def spread_rows(levels: dict[int, dict]) -> list[dict]:
    """Each repeated level's runs and the range of its headline figures, for the curve summary."""
    out = []
    for c in sorted(levels):
        r = levels[c]
        if r.get(MERGED.runs, 1) < 2:
            continue
        row: dict = {SPREAD.c: c, SPREAD.runs: r[MERGED.runs]}
        for name, key, pct in (
            (STATS.output_tokens_per_s, STATS.output_tokens_per_s, None),
            (STATS.goodput_requests_per_s, STATS.goodput_requests_per_s, None),
            ("ttft_p50_s", STATS.ttft_s, DIST.p50),
            ("ttft_p95_s", STATS.ttft_s, DIST.p95),
            ("tpot_p50_s", STATS.tpot_s, DIST.p50),
            ("tpot_p90_s", STATS.tpot_s, DIST.p90),
        ):
            span = curves.spread_of(r, key, pct)
            if span:
                row[name] = span
        out.append(row)
    return out


def spread_note(levels: dict[int, dict]) -> str | None:
    """What the brackets in the table mean, when any level was run more than once."""
    repeated = sorted({r[MERGED.runs] for r in levels.values() if r.get(MERGED.runs, 1) > 1})
    if not repeated:
        return None
    return (
        f"levels run {' or '.join(map(str, repeated))} times: each figure is the median of the runs, in "
        "brackets the range (smallest to largest) of the runs; ok counts every run's requests"
    )


def runs_note(levels: dict[int, dict]) -> str | None:
    """A warning when the curve's levels come from different runs (a rerun appended to the label)."""
    runs = curves.runs_in(levels)
    unmarked = [c for c in sorted(levels) if not curves.run_id(levels[c])]
    if len(runs) + (1 if unmarked and runs else 0) < 2:
        return None
    parts = [f"c={', '.join(map(str, cs))} from run {rid}" for rid, cs in runs.items()]
    if unmarked:
        parts.append(f"c={', '.join(map(str, unmarked))} from a run without an id")
    return (
        f"mixed runs: this curve's levels come from {len(parts)} different runs ({'; '.join(parts)}); "
        "conditions may have changed between them"
    )


def knee_line(d: curves.Curve) -> str:
    first = d.levels[0]
    if d.knee:
        return (
            f"knee: c={d.knee[0]} -> c={d.knee[1]} is the first step where each extra request added less "
            f"than half of what one request gets alone at c={first}"
        )
    return f"knee: none within these levels (each step added at least half of one request's c={first} rate)"


def fit_lines(d: curves.Curve, levels: dict[int, dict]) -> list[str]:
    """The TPOT fit, how its seats were found, and the ceiling it implies: the seats' ceiling when
    the seats are known (given or inferred), the open-ended 1 / b only when they are not (first
    line unindented, the per-level bounds after it indented by two)."""
    if not d.fit:
        why = d.fit_note or "not possible; it takes two or more levels within the server's slots"
        return [f"TPOT fit: {why}"]
    a, b = d.fit["a_s"], d.fit["b_s"]
    used = d.fit["levels_used"]
    out = [
        f"TPOT p50 fit: {a * 1000:.2f} ms + {b * 1000:.3f} ms per concurrent request "
        f"(least squares over c = {', '.join(map(str, used))}; it holds over those levels only)",
        f"seats for the fit: {d.fit['slots_source']}",
    ]
    seats = d.fit.get("slots")
    plateau = max(LevelStats.read(levels[c]).output_tokens_per_s for c in d.levels)
    if d.fit.get("seat_ceiling"):
        out.append(
            f"ceiling at {seats} seats: seats / (a + b x seats) = {d.fit['seat_ceiling']:.1f} tok/s "
            f"(measured peak {plateau:.1f} tok/s); past {seats} at once requests wait for a seat"
        )
    for c in used:
        step = a + b * c
        bound = f"{c / step:8.1f} tok/s" if step > 0 else "no bound (a + b c <= 0)"
        out.append(
            f"  c={c:<4} c / (a + b c) = {bound} if all {c} were decoding all the time; "
            f"measured {LevelStats.read(levels[c]).output_tokens_per_s:.1f}"
        )
    if not d.ceiling:
        out.append("ceiling: none can be read off, TPOT does not grow with c at these levels (b <= 0)")
    elif not seats:
        out.append(
            f"ceiling: 1 / b = {d.ceiling:.1f} tok/s if every request were admitted at once (the seats are "
            f"not known; --server-slots states them); TPOT p50 would reach {d.slo_tpot} s near c = "
            f"{d.c_at_slo:.1f}"
        )
    elif d.c_at_slo is not None and d.c_at_slo <= seats:
        out.append(
            f"TPOT p50 reaches the objective's {d.slo_tpot} s near c = {d.c_at_slo:.1f}, within the seats"
        )
    else:
        out.append(f"TPOT p50 stays within the objective's {d.slo_tpot} s at every seat count up to {seats}")
    return out


def operating_line(d: curves.Curve) -> str:
    why = "highest level with no failures and TTFT p90, TPOT p90 within the goodput objective"
    if not d.operating_point:
        return f"operating point: no level qualifies ({why})"
    top = (
        " (the top level measured: a higher one may qualify too)" if d.operating_point == d.levels[-1] else ""
    )
    return f"operating point: c={d.operating_point}{top} ({why})"


def capacity_line(levels: dict[int, dict], promise_s: float) -> str:
    """Capacity within the promise as the levels show it: exact, at least, or none."""
    from harness.energy.tables import capacity_words

    found = curves.capacity_reading(levels, promise_s)
    watts = capacity_words(levels, found.capacity)  # "8 at once at 210 W, 0.9 J per output token"
    return f"capacity within the promise (p95 first token <= {promise_s:g} s): {found.text}" + (
        f"; {watts}" if watts else ""
    )


def capacity_lines(levels: dict[int, dict], promise_s: float) -> list[str]:
    """The capacity line, then Day 3's sentences on total output and each person's speed there."""
    capacity = curves.capacity_reading(levels, promise_s).capacity
    return [capacity_line(levels, promise_s), *sizing.alone_against_capacity(levels, capacity)]


def differences(a: dict[int, dict], b: dict[int, dict], shared: list[int]) -> list[str]:
    """The conditions that differ between two curves at their first shared level, in words."""
    x, y = a[shared[0]], b[shared[0]]
    return [
        f"not equal: {name.replace('_', ' ')} is {said(x.get(name))} in A and {said(y.get(name))} in B"
        for name in CONDITIONS
        if x.get(name) != y.get(name)
    ]


def compare_rows(a: dict[int, dict], b: dict[int, dict], shared: list[int]) -> list[list[str]]:
    """One row per shared level, in the order of ``COMPARE_HEAD``."""
    rows = []
    for c in shared:
        x, y = LevelStats.read(a[c]), LevelStats.read(b[c])
        ratio = y.output_tokens_per_s / x.output_tokens_per_s if x.output_tokens_per_s else None
        rows.append(
            [
                str(c),
                f"{x.output_tokens_per_s:.1f}",
                f"{y.output_tokens_per_s:.1f}",
                f(ratio, ".2f"),
                f(x.goodput_requests_per_s, ".3f"),
                f(y.goodput_requests_per_s, ".3f"),
                f(x.ttft_s.p50, ".3f"),
                f(y.ttft_s.p50, ".3f"),
                f(x.ttft_s.p90, ".3f"),
                f(y.ttft_s.p90, ".3f"),
                f(x.tpot_s.p50, ".4f"),
                f(y.tpot_s.p50, ".4f"),
                f(x.cached_tokens_mean, ".1f"),
                f(y.cached_tokens_mean, ".1f"),
            ]
        )
    return rows
