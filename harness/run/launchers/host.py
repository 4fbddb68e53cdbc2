"""The host launcher: an engine that runs as a process on this machine (CPU or Metal llama-server,
mlx_lm.server, Lemonade's CLI, the practice server)."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from harness.errors import EngineError, PortBusy
from harness.io.ports import holder, port_open, wait_port_free


@dataclass
class HostLauncher:
    """Start ``argv`` with its output appended to ``log_path``; healthy when ``health_url`` says 200."""

    argv: list[str]
    host: str
    port: int
    health_url: str
    log_path: Path
    env: dict = field(default_factory=dict)
    proc: subprocess.Popen | None = None

    def command(self) -> str:
        """The exact command line, for dry runs and the run manifest."""
        return shlex.join(self.argv)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self, timeout: float = 120.0) -> None:
        if port_open(self.host, self.port):
            who = holder(self.port)
            raise PortBusy(f"port {self.port} is already in use{f' by {who}' if who else ''}; stop it first "
                           "(one server at a time) or choose another port")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env={**os.environ, **self.env}, start_new_session=True)
        except OSError as exc:
            raise EngineError(f"cannot start {self.argv[0]}: {exc.strerror}; is it installed?") from exc
        finally:
            log.close()
        self.wait_healthy(timeout)

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise EngineError(f"{Path(self.argv[0]).name} exited with status {self.proc.returncode} while starting; "
                                  f"read {self.log_path}: {self.last_log_line()}")
            try:
                if requests.get(self.health_url, timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        self.stop()
        raise EngineError(f"{self.health_url} was not healthy after {timeout:.0f} s; read {self.log_path}")

    def last_log_line(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return lines[-1] if lines else "(log empty)"

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the process (SIGTERM, then SIGKILL) and prove the port is free again."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        if not wait_port_free(self.host, self.port, timeout=10):
            raise EngineError(f"port {self.port} is still in use after stopping (held by {holder(self.port) or 'unknown'})")

    def __enter__(self) -> "HostLauncher":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
