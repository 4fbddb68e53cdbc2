"""The NVIDIA track's installs as the engines lab does them: vLLM in its own environment made
by ``uv`` (``uv venv ... --python 3.12 --seed``, then ``uv pip install vllm==0.28.0
--torch-backend=auto`` into it) and TabbyAPI cloned by ``git``. Each runs only where it can: its
tool on the PATH, the host it downloads from reachable (through the proxy the environment names,
where it names one), and not installed already; otherwise it is skipped with the reason. A
rehearsal installs nothing (its stand-ins come from ``make llama-cpu`` and ``make vllm-cpu``).

When uv finds no Python 3.12 here, ``uv venv --python 3.12`` downloads one from GitHub
(python-build-standalone), so that host must answer too (seen here: PyPI reachable, GitHub not).
``installs`` builds the command lines (pure); ``decide`` says which run and why the others do not;
``run_installs`` runs them."""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

VLLM_PIN = "vllm==0.28.0"
TABBY_REPO = "https://github.com/theroyallab/tabbyAPI"
PYTHON = "3.12"


@dataclass(frozen=True)
class Install:
    """One install: what it makes, the tool it needs, the host it downloads from, the file whose
    presence says it is done, and its command lines in order."""

    name: str
    tool: str
    host: str | None  # None: nothing to download (a local repository)
    target: Path
    done_when: Path
    commands: tuple[tuple[str, ...], ...]

    def lines(self) -> list[str]:
        return [shlex.join(c) for c in self.commands]


def installs(
    vllm_venv: str | None, tabby_dir: str | None, vllm: str = VLLM_PIN, tabby_repo: str = TABBY_REPO
) -> list[Install]:
    """The installs a plan asks for (a None path: that one is not asked for)."""
    out = []
    if vllm_venv:
        venv = Path(vllm_venv).expanduser()
        out.append(
            Install(
                "the vLLM environment",
                "uv",
                "pypi.org",
                venv,
                venv / "bin" / "vllm",
                (
                    ("uv", "venv", str(venv), "--python", PYTHON, "--seed"),
                    (
                        "uv",
                        "pip",
                        "install",
                        "--python",
                        str(venv / "bin" / "python"),
                        vllm,
                        "--torch-backend=auto",
                    ),
                    (str(venv / "bin" / "vllm"), "--version"),
                ),
            )
        )
    if tabby_dir:
        tabby = Path(tabby_dir).expanduser()
        out.append(
            Install(
                "TabbyAPI",
                "git",
                urlsplit(tabby_repo).hostname,  # None for a local path or file:// repository
                tabby,
                tabby / "start.sh",
                (
                    ("git", "clone", tabby_repo, str(tabby)),
                    ("git", "-C", str(tabby), "rev-parse", "--short", "HEAD"),
                ),
            )
        )
    return out


def proxy_for(env: dict) -> tuple[str, int] | None:
    """The HTTPS proxy the environment names (``HTTPS_PROXY``/``https_proxy``), as host and port."""
    raw = env.get("HTTPS_PROXY") or env.get("https_proxy")
    if not raw:
        return None
    parts = urlsplit(raw if "//" in raw else "http://" + raw)
    return (parts.hostname or "", parts.port or 80) if parts.hostname else None


def reachable(host: str, env: dict | None = None, timeout: float = 3.0) -> str | None:
    """None when ``host`` can be reached on 443 (or the proxy the environment names can), else why not."""
    proxy = proxy_for(dict(os.environ if env is None else env))
    where = proxy or (host, 443)
    try:
        with socket.create_connection(where, timeout=timeout):
            return None
    except OSError as exc:
        through = f" through the proxy {where[0]}:{where[1]}" if proxy else f" ({host}:443)"
        return f"no network to {host}{through}: {exc.strerror or type(exc).__name__}"


def uv_has_python() -> bool:
    """Whether uv finds a Python 3.12 here without downloading one (``uv python find 3.12``)."""
    try:
        done = subprocess.run(["uv", "python", "find", PYTHON], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def decide(
    found: Install,
    which: Callable[[str], str | None] = shutil.which,
    reach: Callable[[str], str | None] = reachable,
    rehearsal: bool = False,
    has_python: Callable[[], bool] | None = None,
) -> tuple[str, str]:
    """(``run`` | ``done`` | ``skip`` | ``fail``, why) for one install, before anything runs."""
    if found.done_when.exists():
        return "done", f"already installed ({found.done_when} is there)"
    if rehearsal:
        return (
            "skip",
            "rehearsal: the stand-ins come from make llama-cpu and make vllm-cpu; nothing is installed",
        )
    if found.tool == "git" and found.target.exists() and any(found.target.iterdir()):
        return "fail", (
            f"{found.target} exists but holds no {found.done_when.name}: it is not a TabbyAPI checkout; move "
            "it away or point TABBY_DIR at another folder"
        )
    if which(found.tool) is None:
        return "skip", f"{found.tool} is not on the PATH; install {found.tool} first"
    why = reach(found.host) if found.host else None
    if why:
        return "skip", why
    if found.tool == "uv" and not (has_python or uv_has_python)():
        why = reach("github.com")  # uv fetches its Python (python-build-standalone) from GitHub
        if why:
            return "skip", f"{why} (uv finds no Python {PYTHON} here and downloads one from there)"
    return "run", "; ".join(found.lines())


def run_installs(
    todo: list[Install],
    out: Callable[[str], None] = print,
    dry_run: bool = False,
    run: Callable[[tuple[str, ...]], int] | None = None,
    **checks,
) -> int:
    """Each install decided, then run where it can; 0 unless a command failed (or one cannot run
    where it was asked for: a folder in TabbyAPI's place)."""
    run = run or (lambda argv: subprocess.run(list(argv), check=False).returncode)
    failed = 0
    for found in todo:
        verdict, why = decide(found, **checks)
        if verdict == "run" and dry_run:
            verdict, why = "dry run", "its tool and network are here"
        out(f"==> {found.name} ({found.target}): {verdict}: {why}")
        if verdict == "fail":
            failed += 1
        if verdict != "run":
            if verdict != "done":
                out("".join(f"    (not run) $ {line}\n" for line in found.lines()).rstrip("\n"))
            continue
        for argv in found.commands:
            out(f"    $ {shlex.join(argv)}")
            code = run(argv)
            if code != 0:
                out(f"    FAIL  exit status {code}: {shlex.join(argv)}; nothing after it was run")
                failed += 1
                break
    return 1 if failed else 0
