"""A container started with ``docker run --rm`` in the foreground (the engines the compose launcher
has not replaced): a host process whose process is the docker CLI, stopped by removing the named
container as well."""

from __future__ import annotations

import shutil
import subprocess

from harness.errors import EngineError
from harness.engines.launchers.host import HostLauncher


class ContainerLauncher(HostLauncher):
    """``docker run --rm`` in the foreground; stopping it also removes the named container."""

    def start(self, timeout: float = 900.0) -> None:
        if shutil.which("docker") is None:
            raise EngineError(
                "docker is not on PATH; install Docker with the NVIDIA Container Toolkit, or pick a "
                "plan whose engines run on the host"
            )
        probe = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True
        )
        if probe.returncode != 0:
            raise EngineError(
                "the Docker engine is not reachable (docker info failed); start it, or check that "
                "this user may use it"
            )
        super().start(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        name = self.argv[self.argv.index("--name") + 1] if "--name" in self.argv else None
        if name and shutil.which("docker"):
            subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        super().stop(timeout)
