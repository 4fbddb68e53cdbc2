"""A curve's ``/metrics`` readings in the report: per level, the engine's queue peaks and preemptions
and its cached share beside the client's, then each level the lab would have the learner name (a
throughput drop, preemptions, deferral within the slots) with its explanation and remedy."""

from __future__ import annotations

from harness.measure import server_metrics as sm
from harness.report.markdown import table


def lines(label: str, levels: dict[int, dict]) -> list[str]:
    """Markdown for one curve; nothing when no level sampled the engine's /metrics."""
    head, rows = sm.table(levels)
    if not rows:
        return []
    out = [
        "The engine's own `/metrics` during each level (peaks of its queue gauges, the preemption "
        "counter's rise, llama.cpp's batch achieved per decode call, vLLM's KV pool used, the cached "
        "share from its own prompt counters beside the client's):",
        "",
        table(head, rows),
        "",
    ]
    found = [text for _, text in sm.level_findings(label, levels)]
    found += [f"{label} {text}" for text in sm.noise_notes(levels) + sm.use_notes(levels)]
    out += [f"- {text}" for text in found] + ([""] if found else [])
    return out
