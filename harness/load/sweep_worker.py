"""The worker's side of the sweep's distributed load (``harness sweep --processes`` or
``--expect-workers``; ``harness.load.distributed`` is the master's): registered by
``harness.load.user`` on every Locust worker. It says the worker's name to the master, sends every
exact sample there as it finishes, takes its share of each level's requests, and on the master's
word stops sending and says how many it sent (a worker of the same level was lost)."""

from __future__ import annotations

import dataclasses
import os
import socket

SWEEP_ENV = "HARNESS_SWEEP_WORKER"  # set for a sweep's workers: each level's share comes from the master
NAME_ENV = "HARNESS_WORKER_NAME"  # the name this worker gives itself (default: host name and pid)


def worker_name() -> str:
    return os.environ.get(NAME_ENV) or f"{socket.gethostname()}:{os.getpid()}"


def attach(environment, workload_for) -> None:
    """The worker's messages (``workload_for``: the environment's Workload, made on first use)."""
    runner = environment.runner
    sent_before = [0]  # requests this worker had sent when the level's share came

    def on_budget(environment, msg, **_):
        workload = workload_for(environment)
        sent_before[0] = workload.issued
        workload.budget = int(msg.data)

    def on_drain(environment, msg, **_):
        workload = workload_for(environment)
        workload.budget = 0  # send nothing more; what is in flight finishes and is sent back
        runner.send_message("harness_drained", workload.issued - sent_before[0])

    runner.register_message("harness_budget", on_budget)
    runner.register_message("harness_drain", on_drain)

    def forward(request_type, name, context=None, **_):
        if name == "chat" and context and "sample" in context:
            runner.send_message("harness_sample", dataclasses.asdict(context["sample"]))

    environment.events.request.add_listener(forward)
    if os.environ.get(SWEEP_ENV):  # a sweep's master knows the word; a plain `locust --master` does not
        runner.send_message("harness_hello", {"name": worker_name()})
