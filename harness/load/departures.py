"""The open loop's scheduler: one greenlet that sends every request of a level at its due time.

Each request is made ready ahead of its time (its bytes built, a connection taken from the pool
or opened: ``harness.load.request.Departure``); the scheduler waits for the due time
(``harness.workloads.schedules.wait_step``: sleep, on a timerfd where there is one
(``harness.load.wakeup``), then yield to the other greenlets, then spin the last fraction of a
millisecond), writes the request itself and hands the stream to a greenlet of
its own to read. Nothing that can be done before the due time is in the departure's lateness,
and no greenlet has to be started at the due time (a spawned greenlet starts only once the loop
comes round to it, after every stream read that was ready: measured up to milliseconds late).
The lateness is taken as before: the departure (just before the write) minus the due time.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import gevent
import gevent.pool

from harness.workloads.schedules import PRECISE_MARGIN_S, SLEEP_MARGIN_S, wait_step
from harness.load.wakeup import Wakeup

if TYPE_CHECKING:
    from harness.workloads.request import Request
    from harness.load.socket_client import Pool
    from harness.load.request import Departure
    from harness.load.workload import Workload

SPARES = 2  # connections kept open ahead of the schedule, beyond those in use


class Spares:
    """Connections opened ahead of need, each on a greenlet of its own, so that the scheduler
    rarely has to open one itself between two close departures (measured before: a loopback
    connect took 0.8 ms at the median, 21 ms at worst on a busy machine, gevent's resolver
    included). ``top_up`` after each departure keeps ``keep`` idle in the pool; a connect that
    fails is left to the request that needs one, which records the failure."""

    def __init__(self, pool: Pool, keep: int = SPARES) -> None:
        from harness.load.socket_client import Connection

        self.pool, self.keep, self._connection = pool, keep, Connection
        self.opening = gevent.pool.Group()

    def top_up(self) -> None:
        while len(self.pool.idle) + len(self.opening) < self.keep:
            self.opening.spawn(self._open)

    def _open(self) -> None:
        p = self.pool
        try:
            conn = self._connection(p.host, p.port, p.tls, p.connect_timeout)
        except OSError:
            return
        p.release(conn, True)

    def close(self) -> None:
        self.opening.kill()


def wait_until(due: float, wake: Wakeup, clock: Callable[[], float] = time.perf_counter) -> None:
    """Return at ``due`` (on ``clock``), as close after it as the event loop allows: ``wake``
    sleeps, to a margin short of it that depends on how precise ``wake`` is."""
    margin = PRECISE_MARGIN_S if wake.precise else SLEEP_MARGIN_S
    while True:
        step, seconds = wait_step(clock(), due, margin)
        if step == "go":
            return
        if step == "sleep":
            wake.until(due - margin)
        elif step == "yield":
            gevent.sleep(0)


def send_on_schedule(
    workload: Workload,
    offsets: Sequence[float],
    ready: Callable[[Request], Departure],
    read: Callable[[Departure], None],
) -> list[gevent.Greenlet]:
    """Send the workload's requests at ``offsets`` (seconds from now), until its budget is spent:
    each made ready (``ready(request)``: a ``Departure``) as soon as the one before has left,
    written at its time, then read by ``read(departure)`` on a greenlet of its own (returned, to
    be joined). No Locust here (its import patches the standard library): the user passes both."""
    wake = Wakeup()
    start = time.perf_counter()
    readers: list[gevent.Greenlet] = []
    try:
        for offset in offsets:
            job = workload.take()
            if job is None:
                break
            due = start + offset
            # its due time rides with it, so the sample keeps how late it left (schedule_lateness_s)
            departure = ready(dataclasses.replace(job, due=due))
            try:
                wait_until(due, wake)
            except BaseException:  # the level was stopped while it waited: never sent
                departure.drop()
                raise
            readers.append(gevent.spawn(read, departure.go(restart=True)))
    finally:
        wake.close()
    return readers
