"""A fork server for the SIGKILL test: one process that has imported the harness (and, with
``--gevent``, patched as ``harness.cli.entry`` does for the load commands, with Locust imported)
forks each trial's command. The start-up (a few seconds on a loaded machine; tests/integration/
deadlines.py) is paid once, so fifty kills fit in minutes; each child runs the command's own
entry point, ``harness.cli.entry.main`` or Locust's ``main``, and dies by a real SIGKILL.

A trial may carry a trip: the child kills itself with SIGKILL at a named moment that a kill from
outside would rarely hit. ``write``: the N-th write of ``harness.records.notebook`` lands only its
first bytes (a share of them, as the kernel leaves a write cut by a SIGKILL), then the kill.
``call``: the N-th call of a named function (``module:name``), before it runs.

Protocol: one JSON object a line on stdin, one answer a line on stdout.
``{"run": argv, "cwd": dir, "out": file, "trip": {...}}`` -> ``{"pid": N}``;
``{"wait": pid, "timeout": s}`` -> ``{"status": code, -signal, or null while it runs}``.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import time

GEVENT = "--gevent" in sys.argv
if GEVENT:
    from gevent import monkey

    monkey.patch_all()

from harness.cli import commands, entry  # noqa: E402
from harness.records import notebook  # noqa: E402

for _name in commands.NAMES:  # the imports every trial would pay (a start imports its command alone)
    commands.load(_name)

if GEVENT:
    import locust.main  # noqa: E402

    import harness.load.users  # noqa: E402,F401
else:
    import harness.report.run_report  # noqa: E402,F401
    import harness.run.runner  # noqa: E402,F401


if GEVENT:  # the server itself never starts gevent's hub: each child starts its own, unshared
    from gevent.monkey import get_original

    _fork, _waitpid = get_original("os", "fork"), get_original("os", "waitpid")
    _sleep = get_original("time", "sleep")
else:
    _fork, _waitpid, _sleep = os.fork, os.waitpid, time.sleep


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class _TornOs:
    """``os`` as the notebook module sees it, with the N-th write cut short and the process
    killed."""

    def __init__(self, nth: int, share: float):
        self.left, self.share = nth, share

    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd: int, data: bytes) -> int:
        self.left -= 1
        if self.left > 0:
            return os.write(fd, data)
        landed = int(len(data) * self.share)
        if landed:
            os.write(fd, data[:landed])
        _die()
        return landed  # never reached


def _arm(trip: dict | None) -> None:
    if not trip:
        return
    if trip["kind"] == "write":
        notebook.os = _TornOs(trip["nth"], trip["share"])
        return
    module_name, _, attr = trip["target"].partition(":")
    owner = importlib.import_module(module_name)
    real, left = getattr(owner, attr), [trip["nth"]]

    def tripped(*args, **kwargs):
        left[0] -= 1
        if left[0] <= 0:
            _die()
        return real(*args, **kwargs)

    setattr(owner, attr, tripped)


def _child(job: dict) -> None:
    code = 70
    try:
        fd = os.open(job["out"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.chdir(job["cwd"])
        _arm(job.get("trip"))
        sys.argv = list(job["run"])
        if sys.argv[0] == "locust":
            try:
                locust.main.main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
        else:
            code = entry.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:  # noqa: BLE001  said in the output file, then the status
        print(f"forks: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait(pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while True:
        done, status = _waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() >= deadline:
            return None
        _sleep(0.02)


def main() -> None:
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        if "run" in job:
            pid = _fork()
            if pid == 0:
                _child(job)
            answer = {"pid": pid}
        else:
            answer = {"status": _wait(job["wait"], job["timeout"])}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
