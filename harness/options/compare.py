"""Setting one run against another (``harness gate``) or against an engine's own benchmark
(``harness crosscheck``): how much they may differ, and which row is compared."""

from __future__ import annotations

from harness import bounds
from harness.options import Option

ROW = Option("concurrency", int, 20, "the row (concurrency cap) to match", low=1, high=bounds.MAX_CONCURRENCY)
REGRESSION = Option("tolerance", default="5%", help="how much worse is tolerated: 5%% or 0.05")
AGREEMENT = Option("tolerance", float, 0.05, "agreement asked of vllm-bench, a share", low=0, high=1)
VLLM_COMMAND = Option("vllm", default="vllm", help="the vllm command (default: vllm on PATH)")
