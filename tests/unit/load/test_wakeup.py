"""Waking up at a moment (harness.load.wakeup): never before it, on a timerfd where Linux has one,
on gevent's own timer otherwise; a wait cut short leaves nothing armed."""

from __future__ import annotations

import sys
import time

import gevent
import pytest

from harness.load.wakeup import Wakeup


@pytest.mark.parametrize("timerfd", [True, False])
def test_it_wakes_at_its_moment_never_before(timerfd):
    wake = Wakeup(timerfd)
    assert wake.precise == (timerfd and sys.platform.startswith("linux"))
    try:
        for ahead in (-0.001, 0.0, 0.0003, 0.002, 0.01):
            moment = time.perf_counter() + ahead
            wake.until(moment)
            assert time.perf_counter() >= moment
    finally:
        wake.close()
    assert not wake.precise and wake.fd == -1


def test_a_wait_killed_before_its_moment_is_disarmed():
    wake = Wakeup()
    try:
        waiter = gevent.spawn(wake.until, time.perf_counter() + 0.02)
        gevent.sleep(0.002)
        waiter.kill()
        gevent.sleep(0.03)  # past the moment: a timer left armed would have made the fd readable
        moment = time.perf_counter() + 0.005
        wake.until(moment)  # so this one would return at once, too early
        assert time.perf_counter() >= moment
    finally:
        wake.close()
