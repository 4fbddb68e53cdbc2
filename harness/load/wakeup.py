"""Waking up at a moment on ``time.perf_counter``'s clock, for the open loop's scheduler.

gevent's timers wake up to about a millisecond late: libev waits in ``epoll_wait``, whose timeout
is whole milliseconds, rounded up. Where Linux's ``timerfd`` is there (and ``perf_counter`` is
``CLOCK_MONOTONIC``, as it is on Linux), ``Wakeup`` arms one for the absolute moment and waits for
it to become readable in gevent's loop: the kernel's high-resolution timer makes the fd readable,
which ends the ``epoll_wait`` there and then (measured: 30 to 70 µs late at the median on a busy
machine, against 0.1 to 0.6 ms for ``gevent.sleep``). Elsewhere it falls back to ``gevent.sleep``,
and says so (``precise``), so the scheduler keeps a wider margin.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import time
from contextlib import suppress

import gevent
from gevent.hub import get_hub

_CLOCK_MONOTONIC = 1
_TFD_NONBLOCK = os.O_NONBLOCK
_TFD_CLOEXEC = 0o2000000
_TFD_TIMER_ABSTIME = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _libc():
    """The C library's timerfd calls, or None where there are none (not Linux) or the clocks differ."""
    if not hasattr(os, "O_NONBLOCK") or time.get_clock_info("perf_counter").implementation != (
        "clock_gettime(CLOCK_MONOTONIC)"
    ):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        libc.timerfd_create.restype = ctypes.c_int
        libc.timerfd_settime.restype = ctypes.c_int
        return libc
    except (OSError, AttributeError):
        return None


class Wakeup:
    """Sleep until a moment on ``time.perf_counter``; one per sleeper (``close`` when done)."""

    def __init__(self, timerfd: bool = True) -> None:
        self.fd = -1
        libc = _libc() if timerfd else None  # False: gevent's own timers (the fallback, to compare)
        if libc is not None:
            self.fd = libc.timerfd_create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
        self.precise = self.fd >= 0
        if self.precise:
            self._libc = libc
            self._watcher = get_hub().loop.io(self.fd, 1)  # readable: the timer expired
            # first among the watchers a poll found ready (libev's highest priority), so the
            # streams' reads that came in the same poll run after the wake-up, not before it
            with suppress(AttributeError, ValueError):
                self._watcher.priority = 2

    def until(self, moment: float) -> None:
        """Return at ``moment`` or just after (other greenlets run meanwhile)."""
        if not self.precise:
            gevent.sleep(max(0.0, moment - time.perf_counter()))
            return
        whole = int(moment)
        spec = _Itimerspec(_Timespec(0, 0), _Timespec(whole, int((moment - whole) * 1e9)))
        if self._libc.timerfd_settime(self.fd, _TFD_TIMER_ABSTIME, ctypes.byref(spec), None) != 0:
            gevent.sleep(max(0.0, moment - time.perf_counter()))  # not armed: the loop's own timer
            return
        try:
            get_hub().wait(self._watcher)
        except BaseException:  # killed before it fired: disarmed, so it never fires unawaited
            self._libc.timerfd_settime(self.fd, 0, ctypes.byref(_Itimerspec()), None)
            raise
        with suppress(BlockingIOError):
            os.read(self.fd, 8)  # the expiry count, so the next wait starts unreadable

    def close(self) -> None:
        if self.precise:
            self._watcher.close()
            os.close(self.fd)
            self.precise, self.fd = False, -1
