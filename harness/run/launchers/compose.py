"""The compose launcher: one engine's profile of ``compose/compose.yaml`` started with the plan's
settings (as Compose variables), through the ``docker compose`` CLI, and watched through the
Docker SDK: image present, NVIDIA runtime or ROCm devices there, health, the engine's log followed
into the run directory, its version (image digest and the engine's own), its memory; stopped and
the port proven free. Same interface as the other launchers.

Two seams keep it testable without a Docker engine: ``run`` executes a compose command line and
``client`` is a Docker SDK client (or anything with the same few methods).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness.errors import EngineError
from harness.io.ports import holder, wait_port_free
from harness.run import compose_files
from harness.run.launchers.base import NotHealthy, last_log_line, refuse_busy, wait_healthy

PROJECT = "llm-harness"


def _run(argv: list[str], env: dict) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, env={**os.environ, **env}, capture_output=True, text=True, timeout=1800)
    except FileNotFoundError:
        raise EngineError(f"{argv[0]} is not installed; install Docker with the compose plugin") from None


def docker_client():
    """A Docker SDK client from the environment, or a one-line error saying what is missing."""
    try:
        import docker
    except ImportError:
        raise EngineError("the Docker SDK for Python is not installed; run `make setup`") from None
    try:
        client = docker.from_env(timeout=10)
        client.ping()
        return client
    except Exception as exc:  # docker.errors.DockerException and the requests errors under it
        raise EngineError(
            f"the Docker engine is not reachable ({exc.__class__.__name__}); start it, or check "
            "DOCKER_HOST and that this user may use it"
        ) from None


@dataclass
class ComposeLauncher:
    service: str
    profile: str
    variables: dict  # the plan's settings as Compose variables (SLOTS, CTX_TOTAL, ...)
    env_file: Path
    host: str
    port: int
    health_url: str
    log_path: Path
    compose_file: Path = compose_files.COMPOSE_FILE
    run: Callable[[list[str], dict], subprocess.CompletedProcess] = _run
    client_factory: Callable[[], object] = docker_client
    version_command: list[str] | None = None  # the engine's own version, run inside the container
    client: object = None
    container: object = None
    keeps_port = False
    _follower: threading.Thread | None = field(default=None, repr=False)

    def argv(self, *action: str) -> list[str]:
        return [
            "docker",
            "compose",
            "-p",
            PROJECT,
            "-f",
            str(self.compose_file),
            "--env-file",
            str(self.env_file),
            "--profile",
            self.profile,
            *action,
        ]

    def command(self) -> str:
        env = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in self.variables.items())
        return f"{env} {shlex.join(self.argv('up', '-d', '--no-deps', self.service))}".strip()

    @property
    def pid(self) -> int | None:
        return None  # the server runs in a container: memory comes from the container, not a pid

    def service_spec(self) -> dict:
        env = {**compose_files.read_env_file(self.env_file), **{k: str(v) for k, v in self.variables.items()}}
        doc = compose_files.load(self.compose_file, env)
        if self.service not in doc["services"]:
            raise EngineError(f"{self.compose_file} has no service {self.service!r}")
        return doc["services"][self.service]

    def preflight(self, spec: dict) -> None:
        image = spec["image"]
        if "pin-" in image:
            raise EngineError(f"{self.service}: no image tag pinned; set it in {self.env_file}")
        try:
            self.client.images.get(image)
        except Exception as exc:
            if exc.__class__.__name__ != "ImageNotFound":
                raise EngineError(f"cannot inspect image {image}: {exc.__class__.__name__}") from None
            hint = (
                "build it: docker compose build " + self.service
                if spec.get("build")
                else f"docker pull {image}"
            )
            raise EngineError(f"image {image} is not present; {hint}") from None
        gpus = spec.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])
        if any(d.get("driver") == "nvidia" for d in gpus):
            runtimes = (self.client.info() or {}).get("Runtimes", {})
            if "nvidia" not in runtimes:
                raise EngineError(
                    "the NVIDIA container runtime is not installed in Docker (docker info lists "
                    f"{', '.join(runtimes) or 'no'} runtimes); install the NVIDIA Container Toolkit"
                )
        for device in spec.get("devices", []):
            if not Path(device).exists():
                raise EngineError(
                    f"{device} does not exist here: the ROCm/GPU driver is missing or this user cannot see it"
                )
        for volume in spec.get("volumes", []):
            source, _, target = str(volume).partition(":")
            if target.startswith("/models") and not Path(os.path.expanduser(source)).is_dir():
                raise EngineError(
                    f"model library {source} not found; set MODELS_DIR or download the models first"
                )

    def start(self, timeout: float = 900.0) -> None:
        self.client = self.client or self.client_factory()
        spec = self.service_spec()
        self.preflight(spec)
        refuse_busy(self.host, self.port)
        done = self.run(self.argv("up", "-d", "--no-deps", self.service), self.variables)
        if done.returncode != 0:
            last = (done.stderr or done.stdout or "").strip().splitlines()[-1:] or ["no output"]
            raise EngineError(f"docker compose up {self.service} failed: {last[0]}")
        self.container = self._find()
        self._follow_logs()
        self.wait_healthy(timeout)

    def _find(self):
        labels = [f"com.docker.compose.project={PROJECT}", f"com.docker.compose.service={self.service}"]
        found = self.client.containers.list(all=True, filters={"label": labels})
        if not found:
            raise EngineError(f"docker compose reported {self.service} started, but no such container exists")
        return found[0]

    def _follow_logs(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        container = self.container

        def follow() -> None:
            with open(self.log_path, "ab") as out:
                for chunk in container.logs(stream=True, follow=True):
                    out.write(chunk)
                    out.flush()

        self._follower = threading.Thread(target=follow, name=f"logs-{self.service}", daemon=True)
        self._follower.start()

    def _alive(self) -> None:
        self.container.reload()
        state = self.container.attrs.get("State", {})
        if state.get("Status") in ("exited", "dead"):
            raise EngineError(
                f"{self.service} exited with status {state.get('ExitCode')} while starting; "
                f"read {self.log_path}: {self.last_log_line()}"
            )

    def wait_healthy(self, timeout: float) -> None:
        try:
            wait_healthy(self.health_url, timeout, alive=self._alive)
        except NotHealthy:
            self.stop()
            raise EngineError(
                f"{self.health_url} was not healthy after {timeout:.0f} s; read {self.log_path}"
            ) from None

    def last_log_line(self) -> str:
        time.sleep(0.2)  # let the follower write what the container printed last
        return last_log_line(self.log_path)

    def version(self, engine_command: list[str] | None = None) -> str:
        """The image digest, and the engine's own version when a command for it is given (by default
        the definition's ``version_command``)."""
        engine_command = engine_command or self.version_command
        image = self.client.images.get(self.service_spec()["image"])
        digests = image.attrs.get("RepoDigests") or [image.attrs.get("Id", "?")]
        text = digests[0]
        if engine_command:
            code, output = self.container.exec_run(engine_command)
            if code == 0 and output:
                text += "; " + output.decode(errors="replace").strip().splitlines()[-1]
        return text

    def memory_mb(self) -> float | None:
        stats = self.container.stats(stream=False)
        usage = (stats or {}).get("memory_stats", {}).get("usage")
        return None if usage is None else usage / 1e6

    def stop(self, timeout: float = 60.0) -> None:
        for action in (("stop", "-t", "30", self.service), ("rm", "-f", "-s", self.service)):
            self.run(self.argv(*action), self.variables)
        if not wait_port_free(self.host, self.port, timeout=min(timeout, 30)):
            raise EngineError(
                f"port {self.port} is still in use after stopping {self.service} (held by "
                f"{holder(self.port) or 'unknown'})"
            )

    def stopped_note(self) -> str:
        return f"stopped; port {self.port} is free"
