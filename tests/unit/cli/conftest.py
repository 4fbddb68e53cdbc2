"""The CLI commands run in-process here. ``harness check`` reads a stand-in for this machine's
memory bandwidth instead of measuring it: the measurement copies 512 MiB on every core (about 2 s
of a shared 2-core machine, in each test that runs check), and what these tests check is the
limits drawn from the machine table and the records. The measurement itself is tested in
tests/unit/sizing/test_machine_memory.py."""

from __future__ import annotations

import pytest

from harness.sizing.machines import Bandwidth


@pytest.fixture(autouse=True)
def _bandwidth_not_measured(monkeypatch):
    monkeypatch.setattr(
        "harness.report.speed_check.measure_bandwidth",
        lambda *a, **kw: Bandwidth(100.0, 2, "a test's stand-in"),
    )
