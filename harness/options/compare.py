"""Setting one run against another (``harness gate``), many runs beside each other (``harness
compare``) or a run against an engine's own benchmark (``harness crosscheck``): how much they may
differ, which row is compared, and where a comparison is written."""

from __future__ import annotations

from harness import bounds
from harness.options import Option

ROW = Option("concurrency", int, 20, "the row (concurrency cap) to match", low=1, high=bounds.MAX_CONCURRENCY)
REGRESSION = Option(
    "tolerance",
    default="5%",
    help="how much worse is tolerated (compare: how far a median may move either way before it is "
    "called): 5%% or 0.05",
)
AGREEMENT = Option("tolerance", float, 0.05, "agreement asked of vllm-bench, a share", low=0, high=1)
VLLM_COMMAND = Option("vllm", default="vllm", help="the vllm command (default: vllm on PATH)")
REPORT_DIR = Option(
    "report-dir",
    default="compare",
    help="folder for compare.md, compare.html and the charts (made when absent)",
)
