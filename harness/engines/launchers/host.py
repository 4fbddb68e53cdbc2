"""The host launcher: an engine that runs as a process on this machine (CPU or Metal llama-server,
mlx_lm.server, Lemonade's CLI, the practice server)."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path


from harness.errors import EngineError
from harness.engines import memory
from harness.engines.ports import holder, wait_port_free
from harness.engines.launchers.base import (
    binary_key,
    healthy_or_stopped,
    last_log_line,
    probe_version,
    refuse_busy,
)


@dataclass
class HostLauncher:
    """Start ``argv`` with its output appended to ``log_path``; healthy when ``health_url`` says 200.

    ``version_argv`` is the engine's own version command (None: ``version_fallback`` is used)."""

    argv: list[str]
    host: str
    port: int
    health_url: str
    log_path: Path
    env: dict = field(default_factory=dict)
    proc: subprocess.Popen | None = None
    version_argv: list[str] | None = None
    version_fallback: str = "unknown"
    keeps_port = False

    def command(self) -> str:
        """The exact command line, for dry runs and the run manifest."""
        return shlex.join(self.argv)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self, timeout: float = 120.0) -> None:
        refuse_busy(self.host, self.port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # The child gets its own copy of the descriptor; ours is closed as soon as it has started.
        with open(self.log_path, "ab") as log:
            try:
                self.proc = subprocess.Popen(
                    self.argv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env={**os.environ, **self.env},
                    start_new_session=True,
                )
            except OSError as exc:
                raise EngineError(f"cannot start {self.argv[0]}: {exc.strerror}; is it installed?") from exc
        self.wait_healthy(timeout)

    def _alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise EngineError(
                f"{Path(self.argv[0]).name} exited with status {self.proc.returncode} while starting; "
                f"read {self.log_path}: {self.last_log_line()}"
            )

    def wait_healthy(self, timeout: float) -> None:
        healthy_or_stopped(self, timeout, interval=0.2, request_timeout=1.0)

    def last_log_line(self) -> str:
        return last_log_line(self.log_path)

    def version(self) -> str:
        return probe_version(self.version_argv, self.version_fallback)

    def version_key(self) -> tuple | None:
        return binary_key(self.version_argv)

    def memory_mb(self) -> float | None:
        """Resident set of the server and every process it started (a wrapper's child is the engine)."""
        return memory.process_tree_mb(self.pid).get("rss_mb")

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the process (SIGTERM, then SIGKILL) and prove the port is free again."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        if not wait_port_free(self.host, self.port, timeout=10):
            raise EngineError(
                f"port {self.port} is still in use after stopping (held by {holder(self.port) or 'unknown'})"
            )

    def stopped_note(self) -> str:
        return f"stopped; port {self.port} is free"

    def __enter__(self) -> "HostLauncher":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
