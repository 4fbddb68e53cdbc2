"""What the dry run's stop line says the hand-over will check, per launcher kind."""

from __future__ import annotations

from harness.engines.handover_watch import planned


def test_each_kind_says_what_its_stop_reads():
    assert "its processes gone" in planned("host", False)
    assert "its container gone" in planned("compose", False)
    assert "on the shim's host" in planned("shim", False)
    assert "after the unload compared with before the load" in planned("service", True)
    assert planned("external", False) == ""  # an endpoint we did not start is not judged
