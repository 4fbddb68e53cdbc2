"""A long-running service that a CLI tells to load a model (Lemonade's ``lemonade load``): the CLI
returns, the service keeps running and keeps its port; stopping unloads the model."""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import EngineError
from harness.run.launchers.base import probe_version, wait_healthy


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
    pid: int | None = None
    version_argv: list[str] | None = None
    version_fallback: str = "unknown"
    keeps_port = True

    def command(self) -> str:
        return shlex.join(self.argv)

    def start(self, timeout: float = 300.0) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            try:
                done = subprocess.run(
                    self.argv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, **self.env},
                    timeout=timeout,
                )
            except FileNotFoundError:
                raise EngineError(f"{self.argv[0]} is not installed (not on PATH)") from None
        if done.returncode != 0:
            raise EngineError(
                f"{shlex.join(self.argv[:2])} exited with status {done.returncode}; read {self.log_path}"
            )
        self.wait_healthy(timeout)

    def wait_healthy(self, timeout: float) -> None:
        wait_healthy(self.health_url, timeout)

    def version(self) -> str:
        return probe_version(self.version_argv, self.version_fallback)

    def memory_mb(self) -> float | None:
        return None  # the service's process is not ours to find

    def stop(self, timeout: float = 60.0) -> None:
        with open(self.log_path, "ab") as log:
            subprocess.run(
                self.stop_argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env},
                timeout=timeout,
            )

    def stopped_note(self) -> str:
        return "model unloaded; the service keeps its port"
