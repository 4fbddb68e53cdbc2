"""A curve's table, its findings in words, and a level-by-level comparison, from level records only.

``harness summarise`` prints them on a terminal and the run report writes them as Markdown, so the
two say the same thing in the same words. Every function here is pure: records in, cells and
sentences out (``-`` where a figure is absent)."""

from __future__ import annotations

from harness.core import curves

CURVE_HEAD = [
    "c",
    "ok",
    "out tok/s",
    "scaling",
    "req/s",
    "goodput",
    "TTFT p50",
    "TTFT p90",
    "TTFT p95",
    "TPOT p50",
    "TPOT p90",
    "in flight",
    "cached",
]
COMPARE_HEAD = [
    "c",
    "out/s A",
    "out/s B",
    "B/A",
    "goodput A",
    "goodput B",
    "TTFT p50 A",
    "TTFT p50 B",
    "TTFT p90 A",
    "TTFT p90 B",
    "TPOT p50 A",
    "TPOT p50 B",
    "cached A",
    "cached B",
]
# Conditions a level-by-level comparison assumes equal; any difference is stated above the table.
CONDITIONS = ("engine", "model", "quant", "prompt_set", "max_tokens", "context_length", "server_slots")
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
        for k in ("engine", "engine_version", "model", "quant", "host")
        if head.get(k) not in _UNSTATED
    )
    context = head.get("context_length")
    slots = head.get("server_slots")
    return [
        f"curve for {label}" + (f" ({stated})" if stated else ""),
        f"prompts {said(head.get('prompt_set'))}, up to {said(head.get('max_tokens'))} tokens out, "
        f"context {context if context not in _UNSTATED else 'not stated (--context-length)'}, "
        f"slots {slots if slots not in _UNSTATED else 'not stated (--server-slots)'}; "
        f"objective TTFT <= {d.slo_ttft} s and TPOT <= {d.slo_tpot} s",
    ]


def curve_rows(d: curves.Curve, levels: dict[int, dict]) -> list[list[str]]:
    """One row per completed level, in the order of ``CURVE_HEAD``."""
    rows = []
    for c in d.levels:
        r = levels[c]
        rows.append(
            [
                str(c),
                f"{r['completed']}/{r['requests']}",
                f"{r['output_tokens_per_s']:.1f}",
                f(d.scaling[c] if d.scaling else None, ".2f"),
                f(r.get("requests_per_s"), ".3f"),
                f(r.get("goodput_requests_per_s"), ".3f"),
                f(r["ttft_s"].get("p50"), ".3f"),
                f(r["ttft_s"].get("p90"), ".3f"),
                f(r["ttft_s"].get("p95"), ".3f"),
                f(r["tpot_s"].get("p50"), ".4f"),
                f(r["tpot_s"].get("p90"), ".4f"),
                f(r.get("mean_in_flight"), ".1f"),
                f(r.get("cached_tokens_mean"), ".1f"),
            ]
        )
    return rows


def knee_line(d: curves.Curve) -> str:
    first = d.levels[0]
    if d.knee:
        return (
            f"knee: c={d.knee[0]} -> c={d.knee[1]} is the first step where each extra request added less "
            f"than half of what one request gets alone at c={first}"
        )
    return f"knee: none within these levels (each step added at least half of one request's c={first} rate)"


def fit_lines(d: curves.Curve, levels: dict[int, dict]) -> list[str]:
    """The TPOT fit, how its seats were found, and the ceilings it implies (first line unindented,
    the per-level bounds after it indented by two)."""
    if not d.fit:
        return ["TPOT fit: not possible; it takes two or more levels within the server's slots"]
    a, b = d.fit["a_s"], d.fit["b_s"]
    out = [
        f"TPOT p50 fit: {a * 1000:.2f} ms + {b * 1000:.3f} ms per concurrent request "
        f"(least squares over c = {', '.join(map(str, d.fit['levels_used']))})",
        f"seats for the fit: {d.fit['slots_source']}",
    ]
    if d.fit.get("seat_ceiling"):
        plateau = max(levels[c]["output_tokens_per_s"] for c in d.levels)
        out.append(
            f"ceiling at {d.fit['slots']} seats: seats / (a + b x seats) = "
            f"{d.fit['seat_ceiling']:.1f} tok/s (measured peak {plateau:.1f} tok/s)"
        )
    for c in d.fit["levels_used"]:
        step = a + b * c
        bound = f"{c / step:8.1f} tok/s" if step > 0 else "no bound (a + b c <= 0)"
        out.append(
            f"  c={c:<4} c / (a + b c) = {bound} if all {c} were decoding all the time; "
            f"measured {levels[c]['output_tokens_per_s']:.1f}"
        )
    if d.ceiling:
        out.append(
            f"ceiling: 1 / b = {d.ceiling:.1f} tok/s however many are admitted; TPOT p50 would reach "
            f"{d.slo_tpot} s near c = {d.c_at_slo:.1f}"
        )
    else:
        out.append("ceiling: none can be read off, TPOT does not grow with c at these levels (b <= 0)")
    return out


def operating_line(d: curves.Curve) -> str:
    op = f"c={d.operating_point}" if d.operating_point else "no level qualifies"
    return (
        f"operating point: {op} (highest level with no failures and TTFT p90, TPOT p90 inside the objective)"
    )


def capacity_line(capacity: int | None, promise_s: float) -> str:
    found = f"{capacity} at once" if capacity else "no level met it"
    return f"capacity within the promise (p95 first token <= {promise_s:g} s): {found}"


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
        x, y = a[c], b[c]
        ratio = y["output_tokens_per_s"] / x["output_tokens_per_s"] if x["output_tokens_per_s"] else None
        rows.append(
            [
                str(c),
                f"{x['output_tokens_per_s']:.1f}",
                f"{y['output_tokens_per_s']:.1f}",
                f(ratio, ".2f"),
                f(x.get("goodput_requests_per_s"), ".3f"),
                f(y.get("goodput_requests_per_s"), ".3f"),
                f(x["ttft_s"].get("p50"), ".3f"),
                f(y["ttft_s"].get("p50"), ".3f"),
                f(x["ttft_s"].get("p90"), ".3f"),
                f(y["ttft_s"].get("p90"), ".3f"),
                f(x["tpot_s"].get("p50"), ".4f"),
                f(y["tpot_s"].get("p50"), ".4f"),
                f(x.get("cached_tokens_mean"), ".1f"),
                f(y.get("cached_tokens_mean"), ".1f"),
            ]
        )
    return rows
