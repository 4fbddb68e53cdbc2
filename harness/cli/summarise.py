"""``harness summarise``: curves, comparisons and the validation check, a drop-in for the lab's
summarise-load.py (same options), plus capacity within a promise, copies for a peak and charts
(``harness.report.summarise`` chooses and writes; the lines are ``harness.report.summary``'s)."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stdout

from harness.safe_text import printable
from harness import options
from harness.options.record import LABEL
from harness.options.shared import LAB_CHECK, LABBOOK
from harness.options.sizing import PEAK, PROMISE, SPARES
from harness.options.summary import CHART, KNOWN_FAILURE, LIST, MARKDOWN, RECORD_SUMMARY, TPOT_CHART
from harness.report.summarise import summarise


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


def _show(lines: list[str]) -> None:
    for line in lines:
        print(line)


def _warn(lines: list[str]) -> None:
    for line in lines:
        print(printable(line), file=sys.stderr)


def run(args) -> int:
    with redirect_stdout(_Printable(sys.stdout)):
        return summarise(args, _show, _warn)
