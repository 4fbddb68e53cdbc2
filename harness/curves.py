"""Curve summaries: pure functions over level records (SPEC.md definitions).

Scaling = tok/s at c / (c x tok/s per request at the first level). Knee: the first step whose
gain per added request is below half of one request's throughput at the first level. TPOT fit:
least squares TPOT p50 = a + b c over levels at or below the server's slots; ceiling 1/b; c at
the objective = (s - a)/b. Operating point: the highest level with no failures and both p90s
within the objective. Capacity within a promise: the largest level whose p95 TTFT is within it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

BASELINE_LEVELS = (1, 5, 10, 20)
DEFAULT_SLO_TTFT, DEFAULT_SLO_TPOT = 2.0, 0.1


def by_label(records: list[dict]) -> dict[str, dict[int, dict]]:
    """label -> concurrency -> the most recent record (later lines win)."""
    out: dict[str, dict[int, dict]] = {}
    for rec in records:
        out.setdefault(str(rec.get("label")), {})[int(rec["concurrency"])] = rec
    return out


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float] | None:
    """Least squares y = a + b x; None with fewer than two distinct x."""
    if len(set(xs)) < 2:
        return None
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


@dataclass
class Curve:
    levels: list[int]
    per_request: float | None = None
    scaling: dict | None = None
    knee: tuple[int, int] | None = None
    fit: dict | None = None  # a_s, b_s, levels_used
    ceiling: float | None = None
    c_at_slo: float | None = None
    operating_point: int | None = None
    slo_ttft: float = DEFAULT_SLO_TTFT
    slo_tpot: float = DEFAULT_SLO_TPOT


def _p(rec: dict, key: str, pct: str) -> float | None:
    return (rec.get(key) or {}).get(pct)


def curve(levels: dict[int, dict]) -> Curve:
    cs = sorted(c for c, r in levels.items() if r.get("completed"))
    if not cs:
        return Curve(levels=[])
    first = levels[cs[0]]
    d = Curve(levels=cs, slo_ttft=first.get("slo_ttft_s", DEFAULT_SLO_TTFT),
              slo_tpot=first.get("slo_tpot_s", DEFAULT_SLO_TPOT))
    d.per_request = first["output_tokens_per_s"] / cs[0]
    d.scaling = {c: (levels[c]["output_tokens_per_s"] / (c * d.per_request) if d.per_request else None) for c in cs}
    for prev, cur in zip(cs, cs[1:]):
        gain = (levels[cur]["output_tokens_per_s"] - levels[prev]["output_tokens_per_s"]) / (cur - prev)
        if gain < 0.5 * d.per_request:
            d.knee = (prev, cur)
            break
    for c in cs:
        r = levels[c]
        t90, p90 = _p(r, "ttft_s", "p90"), _p(r, "tpot_s", "p90")
        if r["failed"] == 0 and t90 is not None and p90 is not None and t90 <= d.slo_ttft and p90 <= d.slo_tpot:
            d.operating_point = c
    slots = first.get("server_slots")
    used = [c for c in cs if (not slots or c <= slots) and _p(levels[c], "tpot_s", "p50") is not None]
    line = fit_line([float(c) for c in used], [_p(levels[c], "tpot_s", "p50") for c in used])
    if line:
        a, b = line
        d.fit = {"a_s": a, "b_s": b, "levels_used": used}
        if b > 0:
            d.ceiling = 1 / b
            d.c_at_slo = (d.slo_tpot - a) / b
    return d


def capacity_within(levels: dict[int, dict], promise_s: float, pct: str = "p95") -> int | None:
    """The largest level with no failures whose TTFT percentile is within the promise."""
    ok = [c for c, r in levels.items()
          if r.get("completed") and r["failed"] == 0 and _p(r, "ttft_s", pct) is not None
          and _p(r, "ttft_s", pct) <= promise_s]
    return max(ok) if ok else None


def copies_for(peak: int, capacity: int, spare_share: float = 0.2) -> tuple[int, int]:
    """Copies of the server a peak crowd needs, and that number with spares added."""
    if capacity < 1:
        raise ValueError("capacity must be at least 1")
    need = math.ceil(peak / capacity)
    return need, math.ceil(need * (1 + spare_share))


def check(labels: dict[str, dict[int, dict]]) -> list[tuple[str, str]]:
    """The lab's validation rules: (PASS | WARN | FAIL, what was checked)."""
    out: list[tuple[str, str]] = []

    def verdict(ok: bool, text: str, otherwise: str = "FAIL") -> None:
        out.append(("PASS" if ok else otherwise, text))

    base = set(BASELINE_LEVELS)
    sweeps = [n for n, lv in labels.items()
              if base <= set(lv) and all(lv[c]["completed"] for c in base) and lv[1].get("prompt_set") == "mixed"]
    verdict(bool(sweeps), f"a mixed-prompt sweep completed every level of {sorted(base)}: {', '.join(sweeps) or 'none'}")
    for name in sweeps:
        lv = labels[name]
        failed = sum(r["failed"] for r in lv.values())
        verdict(failed == 0, f"{name}: failed requests over all levels = {failed}", "WARN")
        verdict(all(r.get("token_counts") == "usage" for r in lv.values()),
                f"{name}: output tokens counted from the server's usage block", "WARN")
        missing = [k for k in ("host", "quant", "context_length", "server_slots") if lv[1].get(k) in (None, "unknown")]
        verdict(not missing, f"{name}: run context recorded ({', '.join(missing) + ' missing' if missing else 'complete'})",
                "WARN")
    def with_set(s: str) -> list[str]:
        return [n for n, lv in labels.items() if any(r.get("prompt_set") == s for r in lv.values())]

    shared, unique = with_set("shared-prefix"), with_set("unique-prefix")
    verdict(bool(shared) and bool(unique), f"prefix pair present: shared {shared or 'none'}, control {unique or 'none'}")
    for name in shared:
        for c, r in sorted(labels[name].items()):
            if r.get("cached_tokens_mean") is None or not r.get("prompt_tokens_mean"):
                verdict(False, f"{name} c={c}: the server reported no cached-token count", "WARN")
                continue
            share = r["cached_tokens_mean"] / r["prompt_tokens_mean"]
            verdict(share > 0.5, f"{name} c={c}: cached tokens are {share:.0%} of the prompt")
    for name in unique:
        for c, r in sorted(labels[name].items()):
            if r.get("cached_tokens_mean") is not None and r.get("prompt_tokens_mean"):
                share = r["cached_tokens_mean"] / r["prompt_tokens_mean"]
                verdict(share < 0.1, f"{name} c={c}: cached tokens are {share:.0%} of the prompt (control)")
    return out
