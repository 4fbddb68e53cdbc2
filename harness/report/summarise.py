"""``harness summarise`` as one call: which summary its options ask for (the labels listed, the
lab's validation rules, two labels compared, or one label's whole summary with its charts and its
curve-summary record), each batch of lines handed to ``show`` (stdout) or ``warn`` (stderr) as it
comes, and the exit status returned. The lines are ``harness.report.summary``'s."""

from __future__ import annotations

import argparse
from typing import Callable

from harness import bounds
from harness.records.notebook import append_record
from harness.report import summary

Lines = Callable[[list[str]], None]


def summarise(args: argparse.Namespace, show: Lines, warn: Lines) -> int:
    """The summary ``args`` ask for (a parsed ``harness summarise``); 1 when a validation rule
    fails, else 0. A label that is not in the notebook is a ConfigError naming those that are."""
    bounds.sizing(args.promise, args.peak, args.spares)
    labels, warnings = summary.read_curves(args.labbook)
    warn(warnings)
    if args.list:
        show(summary.list_lines(labels, args.labbook))
        show(summary.admission_lines(_admissions(args.labbook, warn)))
        return 0
    if args.check:
        code, lines = summary.check_lines(labels, _admissions(args.labbook, warn), args.known_failure)
        show(lines)
        return code
    if args.compare:
        _compare(args, labels, show)
        return 0
    _label(args, labels, show, warn)
    return 0


def _admissions(labbook: str, warn: Lines) -> list[dict]:
    records, warnings = summary.admission_records(labbook)
    warn(warnings)
    return records


def _compare(args: argparse.Namespace, labels: dict, show: Lines) -> None:
    """Two labels level by level, and their chart with ``--chart``."""
    a, b = args.compare
    for name in (a, b):
        if name not in labels:
            raise summary.missing(name, labels)
    show(summary.compare_lines(a, b, labels))
    show(summary.chart_lines({a: labels[a], b: labels[b]}, args.chart, args.promise) if args.chart else [])


def _label(args: argparse.Namespace, labels: dict, show: Lines, warn: Lines) -> None:
    """One label's whole summary, its charts, and its curve-summary record with ``--record``."""
    if args.label not in labels:
        raise summary.missing(args.label, labels)
    levels = labels[args.label]
    d, capacity, lines, warnings = summary.label_lines(
        args.labbook, args.label, levels, args.markdown, args.promise, args.peak, args.spares
    )
    show(lines)
    warn(warnings)
    if args.chart:
        show(summary.chart_lines({args.label: levels}, args.chart, args.promise))
    if args.tpot_chart:
        from harness.report.charts import tpot_chart  # matplotlib: only when a chart is drawn

        show([f"    chart: {tpot_chart(args.label, levels, d.fit, args.tpot_chart)}"])
    if args.record and d.levels:
        append_record(
            args.labbook,
            summary.summary_record(args.label, levels, d, capacity, args.promise),
            "curve-summary",
        )
        show([f"    appended a curve-summary record for {args.label} to {args.labbook}"])
