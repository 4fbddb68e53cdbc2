"""The shim launcher: an engine that runs natively on the host, started by the host-side shim
(shim/harness_shim.py) for a harness that runs in a container (docs/shim.md).

It asks the shim to start the engine by name with the block's declared settings (never a command
line: the shim builds that from its allow-list), waits for the engine's own health URL from here
(so the harness proves it can reach the engine), brings the engine's log from the shim into the
run directory (after start, on each memory reading and at stop), and asks the shim to stop it.
The records, logs and manifest entries are the host launcher's: ``command()`` is the exact
command line the shim ran, once it has started it.

``pid`` is None: the engine's process is the shim host's, and a pid read inside a container would
name some other process; the shim's reading of its resident set is ``memory_mb``.
"""

from __future__ import annotations

import contextlib
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from harness.bounds import Bounds
from harness.errors import EngineError, TargetError
from harness.endpoints import http_client as http
from harness.endpoints.shim_host import read_token
from harness.engines.ports import wait_port_free
from harness.engines.launchers.base import healthy_or_stopped, last_log_line, refuse_busy


@dataclass
class ShimLauncher:
    """Start ``engine`` through the shim at ``shim_url`` with ``settings`` (the declared ones)."""

    shim_url: str
    token_file: Path
    engine: str
    settings: dict
    preview: list[str]  # the command line as the harness reads the definition (before the shim's fills)
    host: str
    port: int
    health_url: str
    log_path: Path
    version_fallback: str = "unknown"
    started: dict | None = None
    log_offset: int = 0
    keeps_port = False
    pid = None
    request_timeout: float = field(default=30.0)

    # -- talking to the shim -------------------------------------------------------------------
    def _call(self, method: str, path: str, payload=None, timeout: float | None = None) -> http.Reply:
        url = f"{self.shim_url.rstrip('/')}/v1/engines/{self.engine}{path}"
        headers = {"Authorization": f"Bearer {read_token(self.token_file)}"}
        try:
            reply = http.request(method, url, Bounds.of(timeout or self.request_timeout), payload, headers)
        except TargetError as exc:
            raise EngineError(
                f"the shim at {self.shim_url} did not answer ({exc}); is it running? (make shim)"
            ) from None
        if reply.status != 200:
            raise EngineError(
                f"the shim refused {method} {path or '/'} for {self.engine}: "
                f"HTTP {reply.status}: {_error(reply)}"
            )
        return reply

    def command(self) -> str:
        """The command line the shim ran (once started), else the one the definition gives."""
        argv = self.started["argv"] if self.started else self.preview
        return f"(shim {self.shim_url}) {shlex.join(argv)}"

    def start(self, timeout: float = 120.0) -> None:
        refuse_busy(self.host, self.port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_bytes(b"")
        self.log_offset = 0
        self.started = self._call("POST", "/start", {"settings": self.settings}).json()
        self.wait_healthy(timeout)
        self.sync_log()

    def status(self) -> dict:
        return self._call("GET", "").json()

    def _alive(self) -> None:
        state = self.status()
        if not state["running"]:
            self.sync_log()
            raise EngineError(
                f"{self.engine} exited with status {state['returncode']} while starting "
                "(on the shim's host); "
                f"read {self.log_path}: {last_log_line(self.log_path)}"
            )

    def wait_healthy(self, timeout: float) -> None:
        healthy_or_stopped(self, timeout, interval=0.3, request_timeout=1.0)

    def sync_log(self) -> None:
        """Append what the engine logged since the last call to the run directory's copy."""
        while True:
            reply = self._call("GET", f"/log?offset={self.log_offset}")
            if not reply.body:
                return
            with open(self.log_path, "ab") as f:
                f.write(reply.body)
            self.log_offset += len(reply.body)

    def version(self) -> str:
        found = self._call("GET", "/version", timeout=45).json().get("version")
        return found or self.version_fallback

    def devices(self) -> str | None:
        """The engine's device listing as the shim's host prints it (None: the engine has none)."""
        return self._call("GET", "/devices", timeout=90).json().get("devices")

    def memory_mb(self) -> float | None:
        """The resident set of the engine's process tree, as the shim reads it on its host."""
        if self.started is None:
            return None
        self.sync_log()
        return self.status().get("rss_mb")

    def stop(self, timeout: float = 15.0) -> None:
        """Ask the shim to stop the engine (TERM, then KILL), then prove its port free from here."""
        if self.started is None:
            return
        with contextlib.suppress(EngineError):  # the log is a courtesy; stopping is not
            self.sync_log()
        done = self._call("POST", "/stop", timeout=timeout + 20).json()
        self.started = {**self.started, "stopped": done}
        if not done.get("port_free", True) or not wait_port_free(self.host, self.port, timeout=10):
            raise EngineError(f"port {self.port} is still in use after the shim stopped {self.engine}")

    def stopped_note(self) -> str:
        return f"stopped by the shim; port {self.port} is free"


def _error(reply: http.Reply) -> str:
    try:
        return str(json.loads(reply.body).get("error"))
    except (ValueError, AttributeError):
        return reply.text[:200]
