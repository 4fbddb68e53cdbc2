"""A long-running service that a CLI tells to load a model (Lemonade's ``lemonade load``): the CLI
returns, the service keeps running and keeps its port; stopping unloads the model.

Before the load it runs the serve script's own steps (``lemonade status``, the backend install, the
backend list, an unload of whatever was loaded), each into the log. Its health is tried at the
definition's path and, on a 404, at the fallback base (Lemonade's ``/api/v1`` before v10.1); the
API base then follows. The service's process is not ours, but the one listening on the port is
found when the OS shows it, so its memory can be read; it is never stopped."""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import requests

from harness.errors import EngineError
from harness.records.manifest import BEFORE
from harness.engines import memory
from harness.engines.ports import listener_pid
from harness.engines.launchers.base import Launcher, last_log_line, probe_version, wait_healthy


@dataclass(frozen=True)
class Before:
    """One command run before the load; ``check``: a non-zero status stops the start."""

    argv: list[str]
    check: bool = True


@dataclass
class ServiceLauncher:
    """``argv`` loads the model, ``stop_argv`` unloads it; both append their output to ``log_path``."""

    argv: list[str]
    stop_argv: list[str]
    host: str
    port: int
    health_url: str
    log_path: Path
    env: dict = field(default_factory=dict)
    pid: int | None = None  # the process listening on the port, once healthy (None: not visible)
    version_argv: list[str] | None = None
    version_fallback: str = "unknown"
    before: list[Before] = field(default_factory=list)
    api_base: str | None = None  # the API base URL when the fallback path answered (else the plan's)
    fallback_path: str | None = None  # e.g. /api/v1: tried when the health path answers 404
    before_results: list[dict] = field(default_factory=list)
    # A rehearsal's stand-in for the service itself (the practice server imitating lemond): started
    # before the serve script's steps and stopped after the unload, so the run leaves nothing
    # running. None on the hardware, where the service is the machine's own and is never stopped.
    daemon: Launcher | None = None
    _prepared: bool = False

    @property
    def keeps_port(self) -> bool:
        """The service keeps its port after the unload, unless it is a stand-in this run started."""
        return self.daemon is None

    def command(self) -> str:
        return shlex.join(self.argv)

    def before_start_lines(self) -> list[str]:
        """What runs before the load, as the dry run prints it (a rehearsal's stand-in service first)."""
        service = [f"{self.daemon.command()}   (the stand-in service, stopped last)"] if self.daemon else []
        return service + [
            shlex.join(b.argv) + ("" if b.check else "   (its status is not checked)") for b in self.before
        ]

    def _run(self, argv: list[str], timeout: float) -> int:
        """One CLI call with its output appended to the log under a ``$ command`` line."""
        with open(self.log_path, "ab") as log:
            log.write(f"$ {shlex.join(argv)}\n".encode())
            log.flush()
            try:
                done = subprocess.run(
                    argv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, **self.env},
                    timeout=timeout,
                )
            except FileNotFoundError:
                raise EngineError(f"{argv[0]} is not installed (not on PATH)") from None
            except subprocess.TimeoutExpired:
                raise EngineError(
                    f"{shlex.join(argv)} did not finish in {timeout:.0f} s; read {self.log_path}"
                ) from None
        return done.returncode

    def prepare(self, timeout: float = 300.0) -> None:
        """The serve script's steps before the load (the runner runs them before the idle memory
        snapshot, so a model left loaded is unloaded first); ``start`` runs them if not yet run."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.before_results = []
        self._prepared = True
        if self.daemon is not None and self.daemon.pid is None:
            self.daemon.start(timeout)
        for b in self.before:
            code = self._run(b.argv, min(timeout, 900.0))
            self.before_results.append({BEFORE.command: shlex.join(b.argv), BEFORE.status: code})
            if code != 0 and b.check:
                raise EngineError(
                    f"{shlex.join(b.argv)} exited with status {code}; read {self.log_path}: "
                    f"{last_log_line(self.log_path)}"
                )

    def start(self, timeout: float = 300.0) -> None:
        if not self._prepared:
            self.prepare(timeout)
        code = self._run(self.argv, timeout)
        if code != 0:
            raise EngineError(
                f"{shlex.join(self.argv[:2])} exited with status {code}; read {self.log_path}: "
                f"{last_log_line(self.log_path)}"
            )
        self.wait_healthy(timeout)
        self.pid = listener_pid(self.port)

    def wait_healthy(self, timeout: float) -> None:
        if self.fallback_path and self._answers_404(self.health_url):
            root = self.health_url.split("/", 3)
            base = f"{root[0]}//{root[2]}{self.fallback_path}"
            self.health_url, self.api_base = f"{base}/health", base
        wait_healthy(self.health_url, timeout)

    @staticmethod
    def _answers_404(url: str) -> bool:
        try:
            return requests.get(url, timeout=5).status_code == 404
        except requests.RequestException:
            return False

    def version(self) -> str:
        return probe_version(self.version_argv, self.version_fallback)

    def memory_mb(self) -> float | None:
        """Resident set of the process listening on the port and its children (Lemonade's llama.cpp
        backend runs under it), None when the OS does not show that process."""
        return memory.process_tree_mb(self.pid).get("rss_mb")

    def memory_note(self) -> str | None:
        """Why the memory columns of this engine are empty, or None when its process was found."""
        if self.pid is not None:
            return None
        return (
            f"no process listening on port {self.port} is visible to this user (a service of another "
            "user?): its process memory is left out; the idle-snapshot difference stands"
        )

    def stop(self, timeout: float = 60.0) -> None:
        try:
            if self.daemon is None or self.daemon.pid is not None:
                self._run(self.stop_argv, timeout)
        finally:
            if self.daemon is not None:
                self.daemon.stop(timeout)

    def stopped_note(self) -> str:
        if self.daemon is not None:
            return f"model unloaded; the stand-in service stopped; port {self.port} is free"
        return "model unloaded; the service keeps its port"
