"""The Compose command on this machine and the project a run's containers belong to: ``docker
compose`` (v2) or v1's ``docker-compose``, one compose command line run with the plan's variables,
and the line of a failed one that says why; the compose launcher (``compose``) runs through these."""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess

from harness.errors import EngineError

PROJECT = "llm-harness"
V2 = ["docker", "compose"]


def project() -> str:
    """The Compose project every engine of a run belongs to (HARNESS_COMPOSE_PROJECT overrides it,
    so two runs or a test and a run on one Docker engine never touch each other's containers)."""
    return os.environ.get("HARNESS_COMPOSE_PROJECT") or PROJECT


@functools.lru_cache(maxsize=1)
def compose_cli() -> tuple[str, ...]:
    """The Compose command here: ``docker compose`` (v2) where the plugin answers, else v1's
    ``docker-compose`` (1.29: no ``up --wait``, underscores in container names; the launcher needs
    neither), else v2's spelling for the error to name. HARNESS_COMPOSE_CLI forces one."""
    forced = os.environ.get("HARNESS_COMPOSE_CLI")
    if forced:
        return tuple(shlex.split(forced))
    if shutil.which("docker"):
        try:
            if subprocess.run([*V2, "version"], capture_output=True, timeout=20).returncode == 0:
                return tuple(V2)
        except (OSError, subprocess.TimeoutExpired):
            pass
    return ("docker-compose",) if shutil.which("docker-compose") else tuple(V2)


def run_compose(argv: list[str], env: dict) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, env={**os.environ, **env}, capture_output=True, text=True, timeout=1800)
    except FileNotFoundError:
        raise EngineError(
            f"{argv[0]} is not installed; install Docker with the compose plugin (or docker-compose)"
        ) from None


def compose_error(done: subprocess.CompletedProcess) -> str:
    """The line of a failed compose command that says why: its last error line (v1 ends with a
    bare 'Encountered errors while bringing up the project.'), else its last line."""
    lines = [x.strip() for x in (done.stderr or done.stdout or "").splitlines() if x.strip()]
    errors = [x for x in lines if "error" in x.lower() and not x.startswith("Encountered errors")]
    return (errors or lines or ["no output"])[-1][-400:]
