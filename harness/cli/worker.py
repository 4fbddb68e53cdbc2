"""``harness worker``: one Locust worker of a sweep whose master runs on another host
(``harness sweep --expect-workers N``; docs/workers.md).

It becomes ``locust -f <the harness's locustfile> --worker --master-host HOST --master-port PORT``
(the process is replaced: a signal to it is the worker's), marked as a sweep's worker so that it
takes each level's share of the requests from the master. Everything else (the server's URL, the
model, the lengths, both bounds of every request) comes from the master when each level starts;
an API key is read here, from the variable the sweep names (``--api-key-env``), and never sent.
It ends when the sweep ends, or by itself 20 s after its master's last heartbeat (the master
killed, its host gone; ``harness.load.worker.MASTER_GONE_S``)."""

from __future__ import annotations

import os
import sys
from importlib.util import find_spec

from harness import options
from harness import bounds
from harness.options.workers import MASTER_HOST, MASTER_PORT
from harness.options.shared import DRY_RUN


def add_parser(sub) -> None:
    p = sub.add_parser(
        "worker",
        help="a Locust worker for a sweep whose master is on another host (harness sweep --expect-workers)",
        description="Connect to the master of `harness sweep --expect-workers N` and run its share of "
        "each level's load until the sweep ends.",
    )
    options.to_argparse(p, MASTER_HOST, MASTER_PORT, command="worker")
    p.add_argument(
        "--name",
        help="the name this worker has in the sweep's output and records (default: host name:pid)",
    )
    options.to_argparse(p, DRY_RUN, command="worker")
    p.set_defaults(func=run)


def command(args) -> list[str]:
    spec = find_spec("harness.load.locustfile")  # found, not imported: Locust is the worker's to load
    assert spec is not None and spec.origin
    port = bounds.port("--master-port", args.master_port)
    return [
        sys.executable,
        "-m",
        "locust",
        "-f",
        spec.origin,
        "--worker",
        "--master-host",
        args.master_host,
        "--master-port",
        str(port),
    ]


def run(args) -> int:
    cmd = command(args)
    env = {**os.environ, "HARNESS_SWEEP_WORKER": "1"}
    if args.name:
        env["HARNESS_WORKER_NAME"] = args.name
    if args.dry_run:
        name = f"HARNESS_WORKER_NAME={args.name} " if args.name else ""
        print(f"HARNESS_SWEEP_WORKER=1 {name}" + " ".join(cmd))
        return 0
    from harness.load.worker import MASTER_GONE_S

    print(
        f"harness worker: connecting to the sweep's master at {args.master_host}:{args.master_port} "
        f"(Locust retries for up to 5 minutes); it ends when the sweep ends, or {MASTER_GONE_S:g} s "
        "after the master is gone",
        file=sys.stderr,
        flush=True,
    )
    os.execvpe(cmd[0], cmd, env)
    return 1  # not reached: the process is now the worker
