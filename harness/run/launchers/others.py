"""The launchers besides the host process: a container started with ``docker run`` (the hook the
compose launcher replaces), a service a CLI loads a model into (Lemonade), and an endpoint someone
else runs. Same interface as HostLauncher: command(), start(), stop(), pid."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from harness.errors import EngineError, PortBusy
from harness.run.launchers.host import HostLauncher
from harness.io.ports import holder, port_open


class ContainerLauncher(HostLauncher):
    """``docker run --rm`` in the foreground; stopping it also removes the named container."""

    container_name: str = ""

    def start(self, timeout: float = 900.0) -> None:
        if shutil.which("docker") is None:
            raise EngineError("docker is not on PATH; install Docker with the NVIDIA Container Toolkit, or pick a "
                              "plan whose engines run on the host")
        probe = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True)
        if probe.returncode != 0:
            raise EngineError("the Docker engine is not reachable (docker info failed); start it, or check that "
                              "this user may use it")
        super().start(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        name = self.argv[self.argv.index("--name") + 1] if "--name" in self.argv else None
        if name and shutil.which("docker"):
            subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        super().stop(timeout)


@dataclass
class ServiceLauncher:
    """A long-running service told to load a model by a CLI that returns (``lemonade load``)."""

    argv: list[str]
    stop_argv: list[str]
    host: str
    port: int
    health_url: str
    log_path: Path
    env: dict = field(default_factory=dict)
    pid: int | None = None

    def command(self) -> str:
        return shlex.join(self.argv)

    def start(self, timeout: float = 300.0) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            try:
                done = subprocess.run(self.argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **self.env},
                                      timeout=timeout)
            except FileNotFoundError:
                raise EngineError(f"{self.argv[0]} is not installed (not on PATH)") from None
        if done.returncode != 0:
            raise EngineError(f"{shlex.join(self.argv[:2])} exited with status {done.returncode}; read {self.log_path}")
        wait_healthy(self.health_url, timeout)

    def stop(self, timeout: float = 60.0) -> None:
        with open(self.log_path, "ab") as log:
            subprocess.run(self.stop_argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **self.env},
                           timeout=timeout)


@dataclass
class ExternalLauncher:
    """An endpoint someone else runs: started means healthy; stopping is theirs to do."""

    base_url: str
    health_url: str
    pid: int | None = None

    def command(self) -> str:
        return f"(external endpoint {self.base_url}; nothing is started)"

    def start(self, timeout: float = 30.0) -> None:
        wait_healthy(self.health_url, timeout)

    def stop(self, timeout: float = 0.0) -> None:
        return None


def wait_healthy(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            r = requests.get(url, timeout=2)
            if r.status_code == 200:
                return
            last = f"HTTP {r.status_code}"
        except requests.RequestException as exc:
            last = exc.__class__.__name__
        time.sleep(0.5)
    raise EngineError(f"{url} was not healthy after {timeout:.0f} s (last: {last})")


def refuse_busy(host: str, port: int) -> None:
    if port_open(host, port):
        who = holder(port)
        raise PortBusy(f"port {port} is already in use{f' by {who}' if who else ''}; stop it first "
                       "(one server at a time) or choose another port")
