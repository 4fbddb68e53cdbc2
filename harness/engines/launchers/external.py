"""An endpoint someone else runs: nothing is started or stopped, only its health is awaited."""

from __future__ import annotations

from dataclasses import dataclass

from harness.engines.launchers.base import probe_version, wait_healthy


@dataclass
class ExternalLauncher:
    """Started means healthy; stopping is theirs to do. The version is the engine's version command
    when the definition has one that can run here, else the plan's stated version."""

    base_url: str
    health_url: str
    pid: int | None = None
    version_argv: list[str] | None = None
    version_fallback: str = "unknown"
    keeps_port = True

    def command(self) -> str:
        return f"(external endpoint {self.base_url}; nothing is started)"

    def start(self, timeout: float = 30.0) -> None:
        self.wait_healthy(timeout)

    def wait_healthy(self, timeout: float) -> None:
        wait_healthy(self.health_url, timeout)

    def version(self) -> str:
        return probe_version(self.version_argv, self.version_fallback)

    def memory_mb(self) -> float | None:
        return None

    def stop(self, timeout: float = 0.0) -> None:
        return None

    def stopped_note(self) -> str:
        return "external endpoint left as it was"
