"""``harness summarise``: curves, comparisons and the validation check, a drop-in for the lab's
summarise-load.py (same options), plus capacity within a promise, copies for a peak and charts (the
lines are ``harness.report.summary``'s)."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stdout

from harness import bounds
from harness.safe_text import printable
from harness import options
from harness.options.record import LABEL
from harness.options.shared import LAB_CHECK, LABBOOK
from harness.options.sizing import PEAK, PROMISE, SPARES
from harness.options.summary import CHART, KNOWN_FAILURE, LIST, MARKDOWN, RECORD_SUMMARY, TPOT_CHART
from harness.records.notebook import append_record
from harness.report import summary


def add_parser(sub) -> None:
    p = sub.add_parser(
        "summarise", help="curves, comparisons and checks from the notebook (drop-in for summarise-load.py)"
    )
    options.to_argparse(p, LABBOOK, command="summarise")
    what = p.add_mutually_exclusive_group(required=True)
    options.to_argparse(what, LIST, LABEL, command="summarise")
    what.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two labels level by level")
    options.to_argparse(what, LAB_CHECK, command="summarise")
    options.to_argparse(
        p, KNOWN_FAILURE, MARKDOWN, RECORD_SUMMARY, PROMISE, PEAK, SPARES, command="summarise"
    )
    options.to_argparse(p, CHART, TPOT_CHART, command="summarise")
    p.set_defaults(func=run)


class _Printable(io.TextIOBase):
    """Standard output with every line made terminal-safe (``printable``): a notebook is a file
    anyone may have edited, and its labels, engines and hosts are printed as they are written."""

    def __init__(self, out) -> None:
        self.out = out

    def write(self, text: str) -> int:
        self.out.write(printable(text))
        return len(text)

    def flush(self) -> None:
        self.out.flush()


def run(args) -> int:
    with redirect_stdout(_Printable(sys.stdout)):
        return _run(args)


def _show(lines: list[str]) -> None:
    for line in lines:
        print(line)


def _warn(lines: list[str]) -> None:
    for line in lines:
        print(printable(line), file=sys.stderr)


def _admissions(labbook: str) -> list[dict]:
    records, warnings = summary.admission_records(labbook)
    _warn(warnings)
    return records


def _run(args) -> int:
    bounds.sizing(args.promise, args.peak, args.spares)
    labels, warnings = summary.read_curves(args.labbook)
    _warn(warnings)
    if args.list:
        _show(summary.list_lines(labels, args.labbook))
        _show(summary.admission_lines(_admissions(args.labbook)))
        return 0
    if args.check:
        code, lines = summary.check_lines(labels, _admissions(args.labbook), args.known_failure)
        _show(lines)
        return code
    if args.compare:
        a, b = args.compare
        for name in (a, b):
            if name not in labels:
                raise summary.missing(name, labels)
        _show(summary.compare_lines(a, b, labels))
        _show(
            summary.chart_lines({a: labels[a], b: labels[b]}, args.chart, args.promise) if args.chart else []
        )
        return 0
    if args.label not in labels:
        raise summary.missing(args.label, labels)
    levels = labels[args.label]
    d, capacity, lines, warnings = summary.label_lines(
        args.labbook, args.label, levels, args.markdown, args.promise, args.peak, args.spares
    )
    _show(lines)
    _warn(warnings)
    if args.chart:
        _show(summary.chart_lines({args.label: levels}, args.chart, args.promise))
    if args.tpot_chart:
        from harness.report.charts import tpot_chart

        print(f"    chart: {tpot_chart(args.label, levels, d.fit, args.tpot_chart)}")
    if args.record and d.levels:
        append_record(
            args.labbook,
            summary.summary_record(args.label, levels, d, capacity, args.promise),
            "curve-summary",
        )
        print(f"    appended a curve-summary record for {args.label} to {args.labbook}")
    return 0
