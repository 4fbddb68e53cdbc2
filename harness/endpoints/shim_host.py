"""The engines' host as the host-side shim reports it (``GET /v1/host``; docs/shim.md), for a
harness that runs in a container while its engines run natively on the shim's host (Apple silicon on a
Mac: ``make track-m COMPOSE=1``). Inside the container, vm_stat and sysctl are missing and
/proc/meminfo is Docker Desktop's VM's, so the preflight's memory and Metal checks and the
``measure`` step's memory readings ask the shim instead.

The shim is asked when ``HARNESS_SHIM_URL`` is set (as ``harness track --via-shim`` is told where
the shim is), with the token from ``HARNESS_SHIM_TOKEN_FILE``; else this machine is read, as before.
The shim answers a fixed list of read-only commands (its HOST_COMMANDS); ``host_run`` gives their
answers to the callers that take a ``run`` function, and None for any other command.
(Its ``GET /v1/power``, one powermetrics sample, is read by harness/energy/sources/powermetrics.py.)
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Callable

from harness import paths
from harness.bounds import Bounds
from harness.errors import ConfigError, EngineError, TargetError

URL_ENV = "HARNESS_SHIM_URL"
TOKEN_ENV = "HARNESS_SHIM_TOKEN_FILE"
DEFAULT_TOKEN_FILE = "runs/shim/token"

Run = Callable[[list[str]], "str | None"]


def read_token(path: Path) -> str:
    """The shim's bearer token from the file it wrote at start (ConfigError saying what to do)."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(
            f"cannot read the shim's token file {path} ({exc.strerror}); start the shim first (make shim)"
        ) from None
    if not token:
        raise ConfigError(f"the shim's token file {path} is empty; start the shim again (make shim)")
    return token


def shim_url() -> str | None:
    """The shim to ask about the host, or None when the harness reads its own machine."""
    return os.environ.get(URL_ENV) or None


def auth() -> dict:
    """The shim's Authorization header, its token read from ``HARNESS_SHIM_TOKEN_FILE`` (ConfigError)."""
    token = Path(os.environ.get(TOKEN_ENV) or DEFAULT_TOKEN_FILE)
    token = token if token.is_absolute() else paths.workdir() / token
    return {"Authorization": f"Bearer {read_token(token)}"}


def facts(url: str | None = None) -> dict | None:
    """The shim's ``GET /v1/host`` (None without a shim); an EngineError saying what to do when it
    does not answer."""
    from harness.endpoints import http_client as http

    url = url or shim_url()
    if url is None:
        return None
    headers = auth()
    try:
        reply = http.request("GET", f"{url.rstrip('/')}/v1/host", Bounds.of(60), None, headers)
        answer = reply.json() if reply.status == 200 else None
    except (TargetError, ValueError) as exc:
        raise EngineError(
            f"the shim at {url} did not answer /v1/host ({exc}); is it running? (make shim)"
        ) from None
    if not isinstance(answer, dict) or not isinstance(answer.get("commands"), dict):
        raise EngineError(
            f"the shim at {url} answered /v1/host with HTTP {reply.status} and no host facts; "
            "start the shim of this checkout (make shim)"
        )
    return answer


def answers(found: dict) -> Run:
    """A ``run`` function that answers the shim's fixed commands from its facts (None else)."""
    commands = found["commands"]
    return lambda argv: commands.get(" ".join(argv))


def host_run(local: Run) -> Run:
    """The ``run`` function for commands about the engines' host: the shim's answers when the
    harness runs through one, else ``local`` (run here)."""
    found = facts()
    return local if found is None else answers(found)


def host_name() -> str:
    """The engines' host's name (the shim's, else this machine's)."""
    found = facts()
    return platform.node() if found is None else str(found["node"])


def host_system() -> str:
    """The engines' host's system (``Darwin`` for a Mac behind the shim), else this machine's."""
    found = facts()
    return platform.system() if found is None else str(found["system"])
