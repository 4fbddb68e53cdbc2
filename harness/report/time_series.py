"""The run report's section of the server's and the client's time series: for each summarised
curve whose levels read the server's ``/metrics``, a chart of both sides over the levels, and a
table that lays each level's figures beside each other (``harness.exporter.series``)."""

from __future__ import annotations

from typing import Callable

from harness.exporter import series as es
from harness.report.markdown import absent, table
from harness.records.level import LEVEL, STATS

HEAD = [
    "level",
    "readings",
    "client in flight (mean)",
    "server running (mean)",
    "server waiting (peak)",
    "client output tok/s",
    "server output tok/s",
]


def rows(records: list[dict]) -> list[list]:
    """One row per level that carries a series: its figures side by side ('—' where absent)."""
    out = []
    for r in records:
        f = es.side_by_side(r[LEVEL.series])
        figures = [f[k] for k in list(f)[1:]]
        out.append([r.get(STATS.concurrency), f["readings"], *("—" if v is None else v for v in figures)])
    return out


def section(levels_by_label: dict[str, dict[int, dict]], draw: Callable[[str, list[dict]], str]) -> list[str]:
    """Markdown for the curves ``levels_by_label`` holds; ``draw`` makes a curve's chart and
    returns its path as the report links it. Nothing when no curve is shown."""
    if not levels_by_label:
        return []
    lines = ["## The server and the client over time", ""]
    sampled = {
        label: [levels[c] for c in sorted(levels) if levels[c].get(LEVEL.series)]
        for label, levels in levels_by_label.items()
    }
    sampled = {label: records for label, records in sampled.items() if records}
    if not sampled:
        why = (
            "no level read the server's /metrics (a sweep with --metrics-url none, or workers on other hosts)"
        )
        return lines + absent("No time series", why)
    lines += [
        "Each level's server `/metrics` readings, with the client's own figures at the same instants. "
        "The client counts a request's tokens when it ends; the server counts them as it makes them.",
        "",
    ]
    for label, records in sampled.items():
        lines += [
            f"### {label}",
            "",
            f"![{label}: server and client over time]({draw(label, records)})",
            "",
            table(HEAD, rows(records)),
            "",
        ]
    return lines
