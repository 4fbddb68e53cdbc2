"""What ``harness summarise`` shows of a notebook: its labels, a curve's table, charts, the lab's
check with the failures a stand-in is known for, and a curve-summary record."""

from __future__ import annotations

from harness.options import Option

LIST = Option("list", bool, False, "list the labels in the notebook")
KNOWN_FAILURE = Option(
    "known-failure",
    default=(),
    many=True,
    metavar="LABEL=WHY",
    help="with --check: a FAIL about this label is a WARN saying why (a rehearsal stand-in's, "
    "stated in its overlay)",
)
MARKDOWN = Option("markdown", bool, False, "print the curve table as Markdown")
RECORD_SUMMARY = Option("record", bool, False, "with --label, append a curve-summary record")
CHART = Option(
    "chart",
    metavar="PNG",
    help="draw total output and p95 first-token wait against crowd size (for --label or --compare), "
    "and beside it NAME-pareto.png: per-user against total output tokens/s",
)
TPOT_CHART = Option("tpot-chart", metavar="PNG", help="with --label: TPOT against concurrency with the fit")
