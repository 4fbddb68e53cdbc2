"""The open loop's scheduler (harness.load.departures) on gevent's own loop, with a made-up
departure: each request made ready before its due time and written at it, its due time kept
for its lateness. No Locust and no server (the real requests: tests/integration/test_workloads)."""

from __future__ import annotations

import time

import gevent
import pytest

from harness.workloads.schedules import lateness
from harness.load.wakeup import Wakeup
from harness.load.departures import send_on_schedule, wait_until
from harness.load.workload import Workload


class FakeDeparture:
    def __init__(self, job) -> None:
        self.job, self.readied = job, time.perf_counter()
        self.t_sent, self.restarted, self.dropped = None, False, False

    def go(self, restart: bool = False) -> FakeDeparture:
        self.t_sent, self.restarted = time.perf_counter(), restart
        return self

    def drop(self) -> None:
        self.dropped = True


def workload(budget: int) -> Workload:
    return Workload("/v1/chat/completions", "m", ["hello"], 4, budget=budget)


def test_each_request_is_ready_before_its_time_and_leaves_at_it():
    made, read = [], []

    def ready(job):
        made.append(FakeDeparture(job))
        return made[-1]

    offsets = [0.0, 0.0, 0.004, 0.01, 0.03]
    start = time.perf_counter()
    gevent.joinall(send_on_schedule(workload(5), offsets, ready, read.append))
    assert [d.job for d in read] == [d.job for d in made] and len(read) == 5
    for d, offset in zip(read, offsets, strict=True):
        assert d.readied <= d.job.due or offset == 0.0  # made ready ahead (the first two: at once)
        assert lateness(d.job.due, d.t_sent) >= 0 and d.restarted  # never early; starts at its write
    # the due times are the schedule, exactly: one start plus each offset
    first = read[0].job.due
    assert start <= first < start + 0.05
    assert [d.job.due for d in read] == [first + o for o in offsets]


def test_a_spent_budget_ends_the_schedule_and_a_stopped_level_drops_the_ready_one():
    read = []
    gevent.joinall(send_on_schedule(workload(2), [0.0, 0.0, 0.0], FakeDeparture, read.append))
    assert len(read) == 2  # the budget, not the schedule, said how many
    made = []

    def ready(job):
        made.append(FakeDeparture(job))
        return made[-1]

    scheduler = gevent.spawn(send_on_schedule, workload(2), [0.0, 60.0], ready, read.append)
    gevent.sleep(0.01)
    scheduler.kill()  # the runner stopping the level while the second waits for its time
    assert len(made) == 2 and made[1].dropped and made[1].t_sent is None and not made[0].dropped


@pytest.mark.parametrize("timerfd", [True, False])
def test_wait_until_returns_at_its_time_not_before(timerfd):
    wake = Wakeup(timerfd)
    try:
        for ahead in (0.0, 0.0003, 0.001, 0.003, 0.012):
            due = time.perf_counter() + ahead
            wait_until(due, wake)
            assert time.perf_counter() >= due
    finally:
        wake.close()


def test_spares_keep_connections_open_ahead_and_a_refused_one_is_left_to_the_request():
    import socket

    from harness.load.socket_client import Pool
    from harness.load.departures import Spares

    with socket.socket() as listener:  # the kernel completes each handshake; nothing need accept
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        pool = Pool(f"http://127.0.0.1:{listener.getsockname()[1]}", 2.0)
        spares = Spares(pool, keep=2)
        spares.top_up()
        spares.opening.join(timeout=5)
        assert len(pool.idle) == 2
        spares.top_up()  # enough idle: nothing more opened
        assert len(spares.opening) == 0 and len(pool.idle) == 2
        taken = pool.acquire()  # a departure takes one: the next top-up opens one in its place
        spares.top_up()
        spares.opening.join(timeout=5)
        assert len(pool.idle) == 2 and taken not in pool.idle
        taken.close()
        pool.close()
    with socket.socket() as free:  # a port nothing listens on: refused, nothing kept, nothing raised
        free.bind(("127.0.0.1", 0))
        pool = Pool(f"http://127.0.0.1:{free.getsockname()[1]}", 2.0)
        spares = Spares(pool, keep=1)
        spares.top_up()
        spares.opening.join(timeout=5)
        assert pool.idle == []
        spares.close()
