"""The server benchmark script: its target verdicts (pure) and one short real row.

No lateness is asserted here (those numbers belong to the script's printed table); the short row
only checks that the ruler's schedule, 100 tokens/s per stream, was served and counted.
"""

from __future__ import annotations

import importlib.util

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("bench_server", ROOT / "scripts" / "bench_server.py")
bench_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_server)


def _row(profile, streams, mean, p99):
    return {"profile": profile, "streams": streams, "late mean ms": mean, "late p99 ms": p99}


def test_verdicts_compare_each_target_with_its_row():
    rows = [_row("fleet", 64, 0.5, 2.4), _row("ruler", 256, 0.08, 0.5), _row("ruler", 64, 9.0, 9.0)]
    lines = bench_server.verdicts(rows)
    assert lines == [
        "target fleet 64 streams late p99 < 2 ms: 2.4 ms, NOT met",
        "target ruler 256 streams late mean < 1 ms: 0.08 ms, met",
        "target ruler 256 streams late p99 < 5 ms: 0.5 ms, met",
    ]


def test_verdicts_skip_targets_whose_row_was_not_run():
    assert bench_server.verdicts([_row("ruler", 16, 0.1, 0.2)]) == []
