"""`harness crosscheck` samples the other tool's CPU while it runs (moved from tests/unit: it
starts a process)."""

from __future__ import annotations

import sys

from harness.engines.crosscheck_tools import run_tool

# A tool that burns 2 CPU seconds (its own clock, so a loaded machine only makes it take longer):
# the sampler, every 0.25 s, sees its CPU grow by most of that; 0.3 s is far below on any load,
# and far above what a sampler that read once, or never while it ran, would see (0).
BURN = "import time\nt=time.process_time()\nwhile time.process_time()-t<2.0: pass\nprint('done')"


def test_the_tool_is_sampled_for_its_cpu_while_it_runs():
    text, samples = run_tool([sys.executable, "-c", BURN])
    assert text.strip().endswith("done")
    assert len(samples) >= 2 and samples[-1][1] - samples[0][1] >= 0.3  # CPU seconds grew while it ran
