"""The serving lab's troubleshooting rows and its table of a curve's shapes, as checks on level
records, each with the remedy the lab gives (the text in ``data/lab.yaml``'s remedies).

- finish reasons: every request should end on ``length`` (the full answer budget); ``stop`` for some
  means shorter answers, which inflate requests per second;
- repeats (``--repeat``): a headline figure whose runs differ by more than a few per cent;
- a curve's shapes: below the knee, compute-bound, queueing before prefill, prefills interleaved
  with decodes (the falling curve and the client-limited rows live in ``server_metrics`` and
  ``curves``);
- a level's first error matched against the load-error rows (``load_errors`` in
  ``data/diagnoses.yaml``: connection refused naming the lab's ports, a stream with no text, a prompt
  past the context);
- ``cached`` None on vLLM: the server was started without ``--enable-prompt-tokens-details``.

Pure: level records (and the load-error rows) in, (verdict, finding) pairs out."""

from __future__ import annotations

import re

from harness import lab
from harness.records.level import MERGED, ClientCheck, DIST, LEVEL, LevelStats, STATS

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

VARY = lab.threshold("repeats_vary")  # "more than a few per cent"
VARY_REMEDY = lab.remedy("repeats_vary")
STOP_REMEDY = lab.remedy("stop_before_budget")
VLLM_CACHED = lab.remedy("vllm_cached_none")
# A curve's shapes (the lab's table): how far TTFT, TPOT and throughput moved between the first and
# the highest level before a shape is named.
QUEUED_GROWTH = lab.threshold("shape_queued_ttft_growth")
TPOT_TAIL = lab.threshold("shape_interleaved_tpot_tail")
BELOW_KNEE = (lab.threshold("shape_below_knee_scaling"), lab.threshold("shape_below_knee_tpot_growth"))
COMPUTE_BOUND = (
    lab.threshold("shape_compute_bound_scaling"),
    lab.threshold("shape_compute_bound_tpot_share"),
)
SPREAD_NAMES = {
    STATS.output_tokens_per_s: "output tokens/s",
    "ttft_s.p50": "TTFT p50",
    "tpot_s.p50": "TPOT p50",
}


def _p(rec: dict, dist: str, pct: str) -> float | None:
    """A percentile of one of a level's distributions, through the typed measured part."""
    value = getattr(getattr(LevelStats.read(rec), dist), pct)
    return None if value is None else float(value)


def finish_rules(label: str, levels: dict[int, dict]) -> list[tuple[str, str]]:
    """Finish reasons: every request ended on ``length``; a level where some ended on ``stop`` is named."""
    stopped = []
    asked = None
    for c in sorted(levels):
        reasons = levels[c].get(STATS.finish_reasons) or {}
        asked = asked or levels[c].get(LEVEL.max_tokens)
        if reasons.get("stop"):
            stopped.append(f"c={c} {reasons['stop']} of {sum(reasons.values())}")
    if not any(levels[c].get(STATS.finish_reasons) for c in levels):
        return []
    budget = f" {asked}-token" if asked else ""
    if stopped:
        return [
            (
                "WARN",
                f"{label}: requests finished on stop before the{budget} answer limit ({', '.join(stopped)}): "
                f"{STOP_REMEDY}",
            )
        ]
    return [("PASS", f"{label}: every request ended on length (the full{budget} answer)")]


def repeat_rules(label: str, levels: dict[int, dict]) -> list[tuple[str, str]]:
    """Repeated levels (``--repeat``) whose headline figures vary by more than a few per cent."""
    varied = []
    repeated = [c for c in sorted(levels) if levels[c].get(MERGED.runs, 1) > 1]
    for c in repeated:
        spread = levels[c].get(MERGED.spread) or {}
        for key, name in SPREAD_NAMES.items():
            low, high = (spread.get(key) or [None, None])[:2]
            if low and high and (high - low) / low > VARY:
                varied.append(f"{name} at c={c} {low:.3g} to {high:.3g} ({(high - low) / low:.0%})")
    if not repeated:
        return []
    if varied:
        return [
            (
                "WARN",
                f"{label}: numbers vary by more than a few per cent between identical runs "
                f"({'; '.join(varied)}): {VARY_REMEDY}",
            )
        ]
    return [("PASS", f"{label}: repeated runs agree within {VARY:.0%} (c={', '.join(map(str, repeated))})")]


def _queued(rec: dict) -> bool:
    client = ClientCheck.read(rec)
    sm = (client.server_metrics if client else None) or {}
    return any(
        ((sm.get(m) or {}).get("max") or 0) > 0
        for m in ("llamacpp:requests_deferred", "vllm:num_requests_waiting")
    )


def shape_rules(label: str, levels: dict[int, dict]) -> list[tuple[str, str]]:
    """A curve's shapes, read from the first and the highest completed level."""
    cs = [
        c for c in sorted(levels) if (st := LevelStats.read(levels[c])).completed and st.output_tokens_per_s
    ]
    if len(cs) < 2:
        return []
    first, top = levels[cs[0]], levels[cs[-1]]
    t1, tn = _p(first, STATS.tpot_s, DIST.p50), _p(top, STATS.tpot_s, DIST.p50)
    f1, fn = _p(first, STATS.ttft_s, DIST.p90), _p(top, STATS.ttft_s, DIST.p90)
    out: list[tuple[str, str]] = []
    if t1 and tn and f1 and fn and fn / f1 > QUEUED_GROWTH * (tn / t1) and _queued(top):
        out.append(
            (
                "WARN",
                f"{label}: TTFT p90 grew {fn / f1:.1f}x from c={cs[0]} to c={cs[-1]} while TPOT p50 grew "
                f"{tn / t1:.1f}x, and the engine queued requests: they wait for a slot or for the block "
                f"pool before prefill starts; {lab.remedy('queued_before_prefill')}",
            )
        )
    tp90 = _p(top, STATS.tpot_s, DIST.p90)
    if tn and tp90 and tp90 > TPOT_TAIL * tn:
        out.append(
            (
                "WARN",
                f"{label}: TPOT p90 {tp90:.3f} s is {tp90 / tn:.1f}x its p50 at c={cs[-1]}: "
                + lab.remedy("interleaved_prefills"),
            )
        )
    shape = _scaling_shape(label, cs, first, top)
    return out + ([("PASS", shape)] if shape else [])


def _scaling_shape(label: str, cs: list[int], first: dict, top: dict) -> str | None:
    """A curve's first two shapes: below the knee, or compute-bound."""
    t1, tn = _p(first, STATS.tpot_s, DIST.p50), _p(top, STATS.tpot_s, DIST.p50)
    per_first = LevelStats.read(first).output_tokens_per_s / cs[0]
    if not (per_first and t1 and tn):
        return None
    scaling = LevelStats.read(top).output_tokens_per_s / (cs[-1] * per_first)
    at = f"scaling {scaling:.2f} at c={cs[-1]}"
    if scaling > BELOW_KNEE[0] and tn <= BELOW_KNEE[1] * t1:
        return f"{label}: throughput rises with TPOT p50 nearly flat ({at}): {lab.remedy('below_knee')}"
    if scaling < COMPUTE_BOUND[0] and tn / t1 >= COMPUTE_BOUND[1] * cs[-1] / cs[0]:
        return f"{label}: throughput flattens while TPOT p50 rises in step with c ({at}): " + lab.remedy(
            "compute_bound"
        )
    return None


def error_remedy(first_error: str | None, rules: list[dict], workload: str | None = None) -> dict | None:
    """The first load-error row whose pattern the level's first error matches, or None; a row for
    some workloads only (``workloads``: a conversation's history past the context) is skipped for
    the others (``workload``: the level's kind, the labs' prompts when not given)."""
    if not first_error:
        return None
    kind = workload or "prompts"
    return next(
        (r for r in rules if kind in r.get("workloads", [kind]) and re.search(r["pattern"], first_error)),
        None,
    )


def workload_kind(rec: dict) -> str | None:
    """The level's workload kind as its record states it (None for the labs' prompt sets)."""
    wl = rec.get("workload")
    return wl.get("kind") if isinstance(wl, dict) and isinstance(wl.get("kind"), str) else None


def error_rules(label: str, levels: dict[int, dict], rules: list[dict]) -> list[tuple[str, str]]:
    out = []
    for c in sorted(levels):
        err = levels[c].get(STATS.first_error)
        row = error_remedy(err, rules, workload_kind(levels[c]))
        if row:
            out.append(("WARN", f"{label} at c={c}: first error {err!r}: {row['cause']}; {row['remedy']}"))
    return out


def cached_rules(label: str, levels: dict[int, dict]) -> list[tuple[str, str]]:
    none = [
        c
        for c in sorted(levels)
        if str(levels[c].get(LEVEL.engine, "")).startswith("vllm")
        and (st := LevelStats.read(levels[c])).completed
        and st.cached_tokens_mean is None
    ]
    if not none:
        return []
    return [("WARN", f"{label} at c={', '.join(map(str, none))}: {VLLM_CACHED}")]


def rules(labels: dict[str, dict[int, dict]], load_errors: list[dict] | None = None) -> list[tuple[str, str]]:
    """Every row above for every curve, in the check's order."""
    out: list[tuple[str, str]] = []
    for label, levels in labels.items():
        out += finish_rules(label, levels) + repeat_rules(label, levels) + shape_rules(label, levels)
        out += error_rules(label, levels, load_errors or []) + cached_rules(label, levels)
    return out
