"""The worker's side of the sweep's distributed load (``harness sweep --processes`` or
``--expect-workers``; ``harness.load.distributed`` is the master's): registered by
``harness.load.users`` on every Locust worker. It says the worker's name to the master, sends every
exact sample there (those finished within ``BATCH_S`` of each other in one message), takes its
share of each level's requests, and on the master's word stops sending and says how many it sent
(a worker of the same level was lost)."""

from __future__ import annotations

import os
import socket
import sys
import time

import gevent

from harness.measure.sample import as_message
from harness.endpoints import KINDS

SWEEP_ENV = "HARNESS_SWEEP_WORKER"  # set for a sweep's workers: each level's share comes from the master
NAME_ENV = "HARNESS_WORKER_NAME"  # the name this worker gives itself (default: host name and pid)
# Samples go to the master in one message per this many seconds at most, not one each: a message
# costs the worker about 0.13 ms to send (measured), so 256 streams ending together held its event
# loop for some 33 ms, and the first tokens of the requests it had just sent were read up to three
# token gaps late. The master sees each sample at most this much later; its times are the worker's.
BATCH_S = 0.02
# A worker that hears no heartbeat from its master this long ends by itself, saying so in one line
# (the master sends one a second; Locust's own wait is 60 s): a master killed leaves no worker
# loading the server past half a minute.
MASTER_GONE_S = 20.0


def worker_name() -> str:
    return os.environ.get(NAME_ENV) or f"{socket.gethostname()}:{os.getpid()}"


def attach(environment, workload_for) -> None:
    """The worker's messages (``workload_for``: the environment's Workload, made on first use)."""
    runner = environment.runner
    sent_before = [0]  # requests this worker had sent when the level's share came
    returned = [0]  # samples of this level's requests sent back
    pending: list[dict] = []  # samples finished since the last message

    def send_pending() -> None:
        if pending:
            batch = pending[:]
            pending.clear()
            runner.send_message("harness_samples", batch)

    def on_budget(environment, msg, **_):
        workload = workload_for(environment)
        sent_before[0], returned[0] = workload.issued, 0
        workload.budget = int(msg.data)

    def on_drain(environment, msg, **_):
        workload = workload_for(environment)
        workload.budget = 0  # send nothing more; what is in flight finishes and is sent back
        send_pending()
        runner.send_message("harness_drained", workload.issued - sent_before[0])

    runner.register_message("harness_budget", on_budget)
    runner.register_message("harness_drain", on_drain)

    def forward(request_type, name, context=None, **_):
        if name in KINDS and context and "sample" in context:
            if not pending:
                gevent.spawn_later(BATCH_S, send_pending)
            pending.append(as_message(context["sample"]))
            returned[0] += 1

    def in_flight() -> int:
        return max(workload_for(environment).issued - sent_before[0] - returned[0], 0)

    gevent.spawn(watch_master, runner, in_flight)

    environment.events.request.add_listener(forward)
    if os.environ.get(SWEEP_ENV):  # a sweep's master knows the word; a plain `locust --master` does not
        runner.send_message("harness_hello", {"name": worker_name()})


def watch_master(runner, in_flight, gone_s: float = MASTER_GONE_S) -> None:
    """End this worker, in one line, once its master has sent no heartbeat for ``gone_s``: the
    master was killed, or its host or the network between them is gone. The requests it had in
    flight are lost with the master, which would have counted them."""
    while True:
        gevent.sleep(1)
        last = getattr(runner, "last_heartbeat_timestamp", None)
        if last and time.time() - last > gone_s:
            where = f"{getattr(runner, 'master_host', '?')}:{getattr(runner, 'master_port', '?')}"
            print(
                f"harness worker {worker_name()}: no heartbeat from the sweep's master at {where} for "
                f"{gone_s:g} s (it ended, or its host or the network is gone); this worker ends, "
                f"{in_flight()} request(s) it had in flight lost",
                file=sys.stderr,
                flush=True,
            )
            runner.quit()
            return
