"""``harness compare RUN...``: many runs beside each other (``harness.compare``): each run's headline
figures, the curves and the Pareto overlaid, differences called only beyond the runs' own spread
(the gate's test), unlike runs said so instead of compared; written as Markdown and HTML."""

from __future__ import annotations

import sys
from pathlib import Path

from harness import options
from harness.compare.page import write_comparison
from harness.safe_text import printable
from harness.options.compare import REGRESSION, REPORT_DIR
from harness.options.shared import LABBOOK
from harness.options.sizing import PROMISE
from harness.sizing.gate_runs import tolerance


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="many runs side by side: headline figures, overlaid charts, differences beyond the noise",
        description="Lay runs beside each other: one headline row per run, the curves and the Pareto "
        "overlaid and coloured by what differs (engine, version, quantisation, machine, settings). Runs "
        "that sent other requests (model, workload, prompts, lengths, arrival, promise) are said to "
        "stand apart, not compared. A difference is called only where the medians differ by more than "
        "the tolerance and every run of one side lies beyond every run of the other (3 runs a side).",
    )
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="a run directory or notebook (each label in it a run), PATH:LABEL, or a label in --labbook",
    )
    options.to_argparse(p, REGRESSION, command="compare")
    options.to_argparse(p, PROMISE, command="compare")
    options.to_argparse(p, REPORT_DIR, command="compare")
    options.to_argparse(p, LABBOOK, command="compare")
    p.set_defaults(func=run)


def run(args) -> int:
    done = write_comparison(
        args.runs, args.labbook, tolerance(args.tolerance), args.promise, Path(args.report_dir)
    )
    for warning in done.warnings:
        print(printable(warning), file=sys.stderr)
    for line in done.lines:
        print(printable(line))
    print(f"    report: {done.markdown} (one file to open or attach: {done.html})")
    return 0
