"""The compose launcher: one engine's profile of ``compose/compose.yaml`` started with the plan's
settings (as Compose variables), through the ``docker compose`` CLI, and watched through the
Docker SDK: image present, NVIDIA runtime or ROCm devices there, health, the engine's log followed
into the run directory, its version (image digest and the engine's own), its memory; stopped and
the port proven free. Same interface as the other launchers.

Two seams keep it testable without a Docker engine: ``run`` executes a compose command line (by
default ``compose_command.run_compose``, with the Compose CLI found there) and ``client`` is a
Docker SDK client (or anything with the same few methods).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness.errors import EngineError
from harness.engines.ports import holder, wait_port_free
from harness.engines import compose_files
from harness.engines.launchers.compose_command import compose_cli, compose_error, project, run_compose
from harness.engines.launchers.base import NotHealthy, healthy_or_stopped, last_log_line, refuse_busy

WORKER_LOCUSTFILE = "locustfiles/llm_user.py"  # in the harness image (WORKDIR /app)


def _last_check_output(health: dict) -> str:
    runs = health.get("Log") or []
    text = " ".join(str(runs[-1].get("Output", "")).split()) if runs else ""
    return text[-200:] or "no output"


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
    override_files: tuple[Path, ...] = ()  # merged after compose_file (a rehearsal's stand-in swaps)
    merged_file: Path | None = None  # where the merged file Compose is given is written
    run: Callable[[list[str], dict], subprocess.CompletedProcess] = run_compose
    client_factory: Callable[[], object] = docker_client
    version_command: list[str] | None = None  # the engine's own version, run inside the container
    workers: dict | None = None  # the Locust worker service beside the engine: {service, count}
    cli: tuple[str, ...] | None = None  # the compose command; found on start (v2, else v1)
    client: object = None
    container: object = None
    keeps_port = False
    _follower: threading.Thread | None = field(default=None, repr=False)

    def argv(self, *action: str, profile: str | None = None) -> list[str]:
        return [
            *(self.cli or compose_cli()),  # what runs here, in the dry run and the start line too
            "-p",
            project(),
            "-f",
            str(self.merged_file if self.override_files and self.merged_file else self.compose_file),
            "--env-file",
            str(self.env_file),
            "--profile",
            profile or self.profile,
            *action,
        ]

    def up_action(self) -> tuple[str, ...]:
        # --no-build: a missing image is refused by preflight, never built or pulled behind the user's back
        return ("up", "-d", "--no-deps", "--no-build", self.service)

    def command(self) -> str:
        env = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in self.variables.items())
        return f"{env} {shlex.join(self.argv(*self.up_action()))}".strip()

    def exec_prefix(self) -> str:
        """A command run inside the engine's container (``compose exec``: the same in v1 and v2,
        whose container names differ)."""
        return shlex.join(self.argv("exec", "-T", self.service))

    def worker_command(self) -> list[str]:
        """How the sweep's master starts one Locust worker container beside the engine: a one-off
        container of the worker service on the project's network (removed when it exits)."""
        service = (self.workers or {}).get("service", "locust-worker")
        run = ("run", "--rm", "--no-deps", "-T", "-e", "HARNESS_SWEEP_WORKER=1", service)
        return [*self.argv(*run, profile="locust"), "locust", "-f", WORKER_LOCUSTFILE]

    def load_workers(self) -> dict | None:
        """What a sweep against this engine needs to run its load from worker containers: how many,
        how to start one, the address the master listens on (the project network's gateway: the
        host as the containers see it) and the engine's URL by its compose service name."""
        if not self.workers:
            return None
        return {
            "processes": int(self.workers.get("count", 2)),
            "worker_command": shlex.join(self.worker_command()),
            "master_host": self.gateway() if self.client else "<the compose network's gateway>",
            "worker_url": f"http://{self.service}:{self.workers.get('port', self.port)}",
        }

    def gateway(self) -> str:
        # The sweep's master binds this address, not 127.0.0.1 (the binding rule's default): its
        # workers run in containers on the project's bridge network, where 127.0.0.1 is the
        # container itself. The gateway is the host's own address on that network, which Compose
        # creates for this project (``<project>_default``) and removes at stop: the host and its
        # containers reach it; no port of it is published, and another machine reaches it only by
        # routing the bridge's private subnet through this host. The master's port is a free one,
        # open only while the sweep runs.
        network = self.client.networks.get(f"{project()}_default")
        for cfg in network.attrs.get("IPAM", {}).get("Config") or []:
            if cfg.get("Gateway"):
                return cfg["Gateway"]
        raise EngineError(f"the network {project()}_default states no gateway for the Locust master to bind")

    @property
    def pid(self) -> int | None:
        return None  # the server runs in a container: memory comes from the container, not a pid

    def service_spec(self) -> dict:
        # Compose's precedence: the variables given (the command's environment), the shell, the env file.
        variables = {k: str(v) for k, v in self.variables.items()}
        env = {**compose_files.read_env_file(self.env_file), **os.environ, **variables}
        doc = compose_files.load(self.compose_file, env, self.override_files)
        if self.service not in doc["services"]:
            raise EngineError(f"{self.compose_file} has no service {self.service!r}")
        return doc["services"][self.service]

    def container_command(self) -> list[str]:
        """The engine's command line inside its container, as ``docker compose config`` resolves it:
        the profile's entrypoint (when the service sets one) and command, variables filled."""
        spec = self.service_spec()
        words = []
        for key in ("entrypoint", "command"):
            value = spec.get(key) or []
            words += shlex.split(value) if isinstance(value, str) else [str(x) for x in value]
        return words

    def preflight(self, spec: dict) -> None:
        image = spec["image"]
        if "pin-" in image:
            raise EngineError(f"{self.service}: no image tag pinned; set it in {self.env_file}")
        try:
            self.client.images.get(image)
        except Exception as exc:
            if exc.__class__.__name__ != "ImageNotFound":
                raise EngineError(f"cannot inspect image {image}: {exc.__class__.__name__}") from None
            hint = (  # a service built by its own make target names it (x-make-target)
                f"build it: make {spec.get('x-make-target', 'images')} (nothing is pulled or built on start)"
                if spec.get("build")
                else f"pull it first: docker pull {image}"
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
        if self.override_files and self.merged_file:
            compose_files.write_merged(self.compose_file, self.override_files, self.merged_file)
        self.client = self.client or self.client_factory()
        self.cli = self.cli or compose_cli()
        spec = self.service_spec()
        self.preflight(spec)
        refuse_busy(self.host, self.port)
        self._prepare_log_dir()
        done = self.run(self.argv(*self.up_action()), self.variables)
        if done.returncode != 0:
            raise EngineError(f"{' '.join(self.cli)} up {self.service} failed: {compose_error(done)}")
        self.container = self._find()
        self._follow_logs()
        self.wait_healthy(timeout)

    def _prepare_log_dir(self) -> None:
        """The run's engines/ folder, mounted as /logs: writable by the image's unprivileged user."""
        log_dir = self.variables.get("LOG_DIR")
        if log_dir:
            Path(log_dir).mkdir(parents=True, exist_ok=True)
            os.chmod(log_dir, 0o1777)

    def _find(self):
        labels = [f"com.docker.compose.project={project()}", f"com.docker.compose.service={self.service}"]
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
        """The health URL first, then the container's own healthcheck where its image or service
        has one: vLLM answers /health while it still cannot serve, and its image's check is a real
        completion, so a benchmark's first request never meets a server that is still loading."""
        deadline = time.monotonic() + timeout
        healthy_or_stopped(self, timeout, then=lambda: self._wait_container_healthy(deadline))

    def _wait_container_healthy(self, deadline: float, interval: float = 0.5) -> None:
        """Until Docker reports the container healthy; at once when it has no healthcheck. Docker's
        'unhealthy' (its retries spent) is an error with the check's last output."""
        while True:
            self._alive()
            health = self.container.attrs.get("State", {}).get("Health")
            status = (health or {}).get("Status")
            if status in (None, "healthy"):
                return
            if status == "unhealthy":
                self.stop()
                raise EngineError(
                    f"{self.service}: Docker reports its healthcheck unhealthy "
                    f"({_last_check_output(health)}); read {self.log_path}"
                )
            if time.monotonic() >= deadline:
                raise NotHealthy(self.health_url, 0, f"container health '{status}'")
            time.sleep(interval)

    @property
    def container_name(self) -> str | None:
        """The engine's container, for measure's docker stats/top (v1 and v2 name it differently)."""
        return getattr(self.container, "name", None)

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
            lines = (
                [x.strip() for x in output.decode(errors="replace").splitlines() if x.strip()]
                if output
                else []
            )
            if code == 0 and lines:
                text += "; " + next((x for x in lines if x.lower().startswith("version")), lines[-1])
        return text

    def version_key(self) -> tuple | None:
        """The image's id and the version command: the same image answers the same version."""
        try:
            image = self.client.images.get(self.service_spec()["image"])
        except Exception:  # no key only means a second reading, never an error
            return None
        return (image.attrs.get("Id"), tuple(self.version_command or ()))

    def memory_mb(self) -> float | None:
        """The container's memory as ``docker stats`` shows it (the cgroup's usage less its
        inactive file cache), not the docker client's."""
        if self.container is None:
            return None
        try:
            stats = self.container.stats(stream=False) or {}
        except Exception:  # the container is gone (docker.errors.NotFound)
            return None
        mem = stats.get("memory_stats", {})
        usage = mem.get("usage")
        if usage is None:
            return None
        detail = mem.get("stats", {})
        cache = detail.get("inactive_file", detail.get("total_inactive_file", 0))
        return (usage - cache) / 1e6

    def stop(self, timeout: float = 60.0) -> None:
        """``stop``, ``rm`` and then every container left in the project (the sweep's worker
        containers included), whichever Compose made them; then the port must be free."""
        if self.cli is None:
            self.cli = compose_cli()
        for action in (("stop", "-t", "10", self.service), ("rm", "-f", "-s", self.service)):
            self.run(self.argv(*action), self.variables)
        self._remove_left()
        if self._follower is not None:  # the stopped container's last lines reach the log first
            self._follower.join(timeout=5)
        if not wait_port_free(self.host, self.port, timeout=min(timeout, 30)):
            raise EngineError(
                f"port {self.port} is still in use after stopping {self.service} (held by "
                f"{holder(self.port) or 'unknown'})"
            )

    def _remove_left(self) -> None:
        if self.client is None:
            return
        label = f"com.docker.compose.project={project()}"
        try:
            left = self.client.containers.list(all=True, filters={"label": [label]})
        except Exception as exc:  # the engine went away (restarted, stopped) under the run
            raise EngineError(
                f"the Docker engine stopped answering while {self.service} was stopped "
                f"({exc.__class__.__name__}); once it is back, `harness cleanup` removes what is left"
            ) from None
        for container in left:
            remove = getattr(container, "remove", None)
            if remove is not None:
                with contextlib.suppress(Exception):  # gone already (a --rm worker that exited meanwhile)
                    remove(force=True)
        networks = getattr(self.client, "networks", None)
        if networks is not None:  # the project's network goes too; the next engine's `up` makes it again
            with contextlib.suppress(Exception):
                networks.get(f"{project()}_default").remove()

    def stopped_note(self) -> str:
        return f"stopped and removed ({' '.join(self.cli or compose_cli())}); port {self.port} is free"
