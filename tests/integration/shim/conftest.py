"""The host-side shim as a learner runs it: ``python3 shim/harness_shim.py serve`` under the
system Python (the standard library only, never this virtual environment), on a free port of
127.0.0.1, with an allow-list that ``harness shim-allow`` wrote from a plan."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import yaml

from tests.conftest import ROOT, free_port

SHIM = ROOT / "shim" / "harness_shim.py"
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin") or sys.executable


def write_plan(folder: Path, blocks: list[dict], name: str = "shim-test") -> Path:
    """A plan of ``blocks`` (id, engine, settings) and nothing else."""
    stages = [
        {
            "id": b["id"],
            "engine": b["engine"],
            "settings": b.get("settings", {}),
            "record": {},
            "steps": b.get("steps", []),
        }
        for b in blocks
    ]
    plan = {
        "schema_version": 1,
        "name": name,
        "title": "shim test",
        "machine": None,
        "variables": {"ACCELERATOR": "cpu"},
        "sweep": {},
        "stages": stages,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def write_allow(folder: Path, plan: Path, library: Path, extra: tuple[str, ...] = ()) -> Path:
    out = folder / "allow.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "shim-allow",
            str(plan),
            "--out",
            str(out),
            "--library",
            str(library),
            *extra,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return out


class Shim:
    """A running shim: its URL, token, state folder and process."""

    def __init__(self, proc: subprocess.Popen, port: int, state: Path, bind: str = "127.0.0.1"):
        self.proc, self.port, self.state = proc, port, state
        self.url = f"http://{bind}:{port}"
        self.token = (state / "token").read_text().strip()

    def auth(self, token: str | None = None) -> dict:
        return {"Authorization": f"Bearer {token or self.token}"}

    def get(self, path: str, token: str | None = None) -> requests.Response:
        return requests.get(self.url + path, headers=self.auth(token), timeout=30)

    def post(self, path: str, body: dict | None = None, token: str | None = None) -> requests.Response:
        return requests.post(self.url + path, json=body or {}, headers=self.auth(token), timeout=60)

    def log_lines(self) -> list[str]:
        log = self.state / "shim.log"
        return log.read_text().splitlines() if log.exists() else []

    def logged(self, words: str, count: int, after: int = 0, timeout: float = 10) -> list[str]:
        """The log's lines past the first ``after`` that carry ``words``, once ``count`` of them are
        there or ``timeout`` has passed: the shim writes a request's line after its answer has gone,
        so a client that has its answer may read the log before that line is in it."""
        deadline = time.monotonic() + timeout
        while True:
            lines = [line for line in self.log_lines()[after:] if words in line]
            if len(lines) >= count or time.monotonic() > deadline:
                return lines
            time.sleep(0.05)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode


def start_shim(
    allow: Path,
    state: Path,
    library: Path,
    extra: tuple[str, ...] = (),
    port: int | None = None,
    env: dict | None = None,
    prefix: tuple[str, ...] = (),
    script: Path = SHIM,
) -> Shim:
    """The shim started on the system Python; ``env`` adds to its environment, ``prefix`` runs it
    under another command (setpriv, as another user), ``script`` is the shim's file."""
    port = port or free_port()
    state.mkdir(parents=True, exist_ok=True)
    out = open(state / "stdout.txt", "w")  # noqa: SIM115 (the shim's stdout, open while it runs)
    argv = [
        *prefix,
        SYSTEM_PYTHON,
        str(script),
        "serve",
        "--allow",
        str(allow),
        "--library",
        str(library),
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--state-dir",
        str(state),
        *extra,
    ]
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        stdout=out,
        stderr=subprocess.STDOUT,
        env={**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **(env or {})},
    )
    deadline = time.monotonic() + 120  # a deadline for a hang, a loaded machine's start included
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the shim exited: {(state / 'stdout.txt').read_text()}")
        if (state / "token").exists() and "listening" in (state / "stdout.txt").read_text():
            return Shim(proc, port, state)
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("the shim did not start in 20 s")


@pytest.fixture
def library(tmp_path: Path) -> Path:
    lib = tmp_path / "models"
    lib.mkdir()
    (lib / "model.gguf").write_bytes(b"GGUF")
    return lib


@pytest.fixture
def shim(tmp_path: Path, library: Path):
    """A shim allowed two engines: the practice server, and llama-server-cpu-shim pointed at
    /bin/true (its path checks are what is tested; it is never started with a good model here)."""
    plan = write_plan(
        tmp_path,
        [
            {"id": "practice", "engine": "practice-shim"},
            {"id": "llama", "engine": "llama-server-cpu-shim", "settings": {"llama_server": "/bin/true"}},
        ],
    )
    s = start_shim(write_allow(tmp_path, plan, library), tmp_path / "state", library)
    yield s
    s.stop()


def allow_of(shim: Shim) -> dict:
    return json.loads(shim.get("/v1/engines").text)
