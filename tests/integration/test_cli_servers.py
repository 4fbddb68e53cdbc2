"""`harness check` against a running practice server, then against the same port once it stopped."""

import pytest

from harness.cli import main


@pytest.mark.slow
def test_check_reports_speed_limit_and_up_down(practice, capsys):
    server = practice("kit")
    assert main(["check", "--machine", "m4-max", "--base-url", server.base_url]) == 0
    out = capsys.readouterr().out
    assert "~546 GB/s (machine table: Apple M4 Max, --machine;" in out and "a lower bound" in out
    assert "~111 tok/s for a 4.9 GB model" in out
    assert "mock:        UP" in out and "slots=8" in out
    server.stop()
    assert main(["check", "--machine", "spark", "--base-url", server.base_url]) == 1
    assert "DOWN" in capsys.readouterr().out
