"""What every engine launcher offers (docs/architecture.md, "Contracts"), and the pieces they share: the one
health wait, the busy-port refusal and the version probe.

The health wait sends its requests through ``harness/endpoints/http_client.py`` like every other request to a
server: each try is bounded in all and per gap without a byte (``harness.bounds.Bounds``), and
cut to the time the wait has left, so a health URL that never answers, or trickles, cannot hold a
start past the wait's own ``timeout``.

The runner talks to launchers only through :class:`Launcher`, so adding a kind of launcher is a
new module and a row in the table in ``launchers/__init__.py``, never a branch in the runner.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from typing import Callable, Protocol, runtime_checkable

from harness.bounds import Bounds
from harness.errors import EngineError, PortBusy, TargetError, TargetUnreachable
from harness.endpoints import http_client as http
from harness.engines.ports import holder, port_open


@runtime_checkable
class Launcher(Protocol):
    """One engine's lifecycle: start it, know when it is healthy, say what it is, stop it.

    ``keeps_port`` is True for launchers that do not own the server (an external endpoint, a
    service that only unloads its model): the runner then neither refuses a busy port before
    starting nor claims the port is free after stopping.
    """

    keeps_port: bool

    def command(self) -> str:
        """The exact command line it executes (the dry-run line and the manifest's record)."""

    def start(self, timeout: float) -> None:
        """Start the engine and return once it is healthy; EngineError (or PortBusy) otherwise."""

    def wait_healthy(self, timeout: float) -> None:
        """Return once the health URL answers 200; EngineError when it does not in time."""

    def version(self) -> str:
        """The engine's version in words, for the records ("unknown ..." when it cannot be read)."""

    @property
    def pid(self) -> int | None:
        """The server process the measure step reads, or None when there is none here."""

    def memory_mb(self) -> float | None:
        """Resident memory of the engine (its process tree, or its container), None when unknown."""

    def stop(self, timeout: float) -> None:
        """Stop the engine and, unless ``keeps_port``, prove its port free (EngineError if not)."""

    def stopped_note(self) -> str:
        """What stopping left behind, in words, for the stop step in the manifest."""


@runtime_checkable
class KnowsItsBuild(Protocol):
    """A launcher that can say which build of its engine it runs without asking the engine: two
    starts with the same key run the same build, so the runner reads the version once (``vllm
    --version`` takes seconds: a Python import as heavy as the server's own)."""

    def version_key(self) -> tuple | None:
        """What identifies the build (the binary and its mtime, the image's id), None if unknown."""


@runtime_checkable
class StartsLoadWorkers(Protocol):
    """A launcher that can also start the load's Locust workers beside its engine (compose)."""

    def load_workers(self) -> dict | None:
        """{processes, worker_command, master_host, worker_url} for the sweep, or None."""


@runtime_checkable
class Prepares(Protocol):
    """A launcher with steps of its own before the engine loads (a service's status check, backend
    install and unload), which the runner runs before the idle memory snapshot."""

    def prepare(self, timeout: float) -> None:
        """Run them; EngineError when one that must succeed does not."""


class NotHealthy(EngineError):
    """The health URL did not answer 200 in time; ``last`` is what it answered last."""

    def __init__(self, url: str, timeout: float, last: str):
        super().__init__(f"{url} was not healthy after {timeout:.0f} s (last: {last})")
        self.url, self.timeout, self.last = url, timeout, last


def health_answer(url: str, bound_s: float) -> str | None:
    """One GET of a health URL under endpoints/http_client.py's two bounds (``bound_s`` in all, and without a
    byte): None when it answered 200, else what it did instead, in words."""
    try:
        status = http.request("GET", url, Bounds.of(max(bound_s, 0.01))).status
    except TargetUnreachable:
        return "nothing answers"
    except TargetError as exc:
        return str(exc).removeprefix(f"GET {url}: ")
    return None if status == 200 else f"HTTP {status}"


def wait_healthy(
    url: str,
    timeout: float,
    alive: Callable[[], None] | None = None,
    interval: float = 0.5,
    request_timeout: float = 2.0,
) -> None:
    """Poll ``url`` until it answers 200, for ``timeout`` seconds at most: each try is bounded by
    ``request_timeout`` (in all and per gap; cut to the time left), so the wait ends within its
    ``timeout`` whatever the server does. ``alive`` is called before each try and raises when the
    engine has already died, so a crash is reported at once rather than after the timeout.

    A last try that the time left cut short and that timed out says nothing of the server, only
    that the wait ran out: what an earlier try answered (a 500, a malformed status line) is kept."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while (left := deadline - time.monotonic()) > 0:
        if alive is not None:
            alive()
        bound = min(request_timeout, left)
        answer = health_answer(url, bound)
        if answer is None:
            return
        if not (bound < request_timeout and answer.startswith("Timeout:") and last != "no answer"):
            last = answer
        time.sleep(max(0.0, min(interval, deadline - time.monotonic())))
    raise NotHealthy(url, timeout, last)


def healthy_or_stopped(launcher, timeout: float, then: Callable[[], None] | None = None, **options) -> None:
    """Wait for ``launcher.health_url`` (``options``: wait_healthy's interval and request_timeout),
    then ``then`` (a container's own healthcheck); when it never turns healthy, stop the launcher
    and raise EngineError with what the URL answered last and the log to read."""
    try:
        wait_healthy(launcher.health_url, timeout, alive=launcher._alive, **options)
        if then is not None:
            then()
    except NotHealthy as exc:
        launcher.stop()
        raise EngineError(
            f"{launcher.health_url} was not healthy after {timeout:.0f} s (last: {exc.last}); "
            f"read {launcher.log_path}"
        ) from None


def refuse_busy(host: str, port: int) -> None:
    """Raise PortBusy when something already answers on the port: one server at a time."""
    if port_open(host, port):
        who = holder(port)
        raise PortBusy(
            f"port {port} is already in use{f' by {who}' if who else ''}; stop it first "
            "(one server at a time) or choose another port"
        )


def last_log_line(log_path) -> str:
    """The last line of an engine's log, for an error message that says why it died."""
    try:
        lines = log_path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return lines[-1] if lines else "(log empty)"


def binary_key(argv: list[str] | None) -> tuple | None:
    """A version command's identity: the command and the executable's path, size and mtime (a
    rebuilt or reinstalled engine is a new key). None when the executable is not found."""
    if not argv:
        return None
    found = shutil.which(argv[0])
    try:
        st = os.stat(found) if found else None
    except OSError:
        return None
    return (tuple(argv), found, st.st_size, st.st_mtime_ns) if st else None


def read_version(launcher: Launcher, seen: dict[tuple, str]) -> str:
    """``launcher.version()``, read once per build in a run: ``seen`` keeps each build's reading by
    its key (a reading that says "unknown" is not kept, so the next start asks again)."""
    key = launcher.version_key() if isinstance(launcher, KnowsItsBuild) else None
    if key is not None and key in seen:
        return seen[key]
    version = launcher.version()
    if key is not None and not version.startswith("unknown"):
        seen[key] = version
    return version


def probe_version(argv: list[str] | None, fallback: str) -> str:
    """Run an engine's version command: the first line starting with "version", else its last
    line. ``fallback`` (the plan's stated version) is used when the engine has no such command."""
    if not argv:
        return fallback
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if done.returncode != 0:
        return f"unknown ({shlex.join(argv)} exited with status {done.returncode})"
    lines = [x.strip() for x in (done.stdout + done.stderr).splitlines() if x.strip()]
    for line in lines:
        if line.lower().startswith("version"):
            return line
    return lines[-1] if lines else "unknown"


def serve_until_stopped(launcher) -> None:
    """Serve in the foreground while the engine runs; Ctrl-C or SIGTERM (raised here as
    KeyboardInterrupt) stops it, and ``stop`` proves its port free."""
    try:
        while launcher.proc is not None and launcher.proc.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    launcher.stop()
