"""Load from several Locust workers (docs/workers.md): local
processes, the compose launcher's containers, or workers on other hosts."""

from __future__ import annotations

import os
from types import MappingProxyType

from harness import bounds
from harness.options import Option, OptionSet

MAX_PROCESSES = 4 * (os.cpu_count() or 1)
LOCUST_MASTER_PORT = 5557  # Locust's own default: what a worker's --master-port assumes

PROCESSES = Option(
    "processes",
    int,
    0,
    "closed loop: run the load in N Locust worker processes (a master here) when one client process "
    "is the limit",
    low=0,
    high=MAX_PROCESSES,
)
WORKER_COMMAND = Option(
    "worker-command",
    help="with --processes: start each Locust worker with this command line instead of a local "
    "process (the compose launcher's one-off worker container beside the engine)",
)
EXPECT_WORKERS = Option(
    "expect-workers",
    int,
    0,
    "closed loop: run the load in N Locust workers on other hosts, each started there with "
    "`harness worker --master-host THIS-HOST --master-port PORT` (docs/workers.md); the master "
    "here waits for them, listening on --master-host and --master-port",
    low=0,
    high=1000,
)
MASTER_HOST = Option(
    "master-host",
    default="127.0.0.1",
    help="the Locust master's address: where the sweep's master listens for its workers (with "
    "--expect-workers, this machine's address on the network the workers share; 0.0.0.0 is every "
    "interface), or where a worker finds it",
    required=frozenset({"worker"}),
)
MASTER_PORT = Option(
    "master-port",
    int,
    None,
    "the Locust master's port (default: 5557, Locust's own, with --expect-workers; a free one the "
    "system picks with --processes)",
    low=1,
    high=65535,
    defaults=MappingProxyType({"worker": LOCUST_MASTER_PORT}),
)
WORKER_WAIT = Option(
    "worker-wait",
    float,
    300.0,
    "with --expect-workers: seconds to wait for them all to connect before the first level",
    low=1e-3,
    high=bounds.MAX_SECONDS,
    positive=True,
)
WORKER_URL = Option(
    "worker-url",
    help="with --worker-command or --expect-workers: the server's root URL as the workers reach it "
    "(its compose service name, or its address from the worker hosts); the master still checks and "
    "warms it at --base-url",
)

WORKERS = OptionSet(
    "workers",
    (PROCESSES, WORKER_COMMAND, EXPECT_WORKERS, MASTER_HOST, MASTER_PORT, WORKER_WAIT, WORKER_URL),
)
