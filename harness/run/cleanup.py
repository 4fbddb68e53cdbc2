"""Cleanup by our own records: every server a track run started and did not stop (its manifest
says ``running`` with a pid, or a container name), stopped; every port it used proven free; the
disk the models and environments take, listed; one named checkpoint removed only on request."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import psutil

from harness.core.records import now_stamp
from harness.io.ports import holder, wait_port_free


def manifests(runs_root: Path) -> list[Path]:
    return sorted(runs_root.glob("*/manifest.json"))


def recorded_servers(runs_root: Path) -> list[dict]:
    """Engines the manifests under ``runs_root`` still mark running, with the run they belong to."""
    found = []
    for path in manifests(runs_root):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        for block, entry in data.get("engines", {}).items():
            if entry.get("running"):
                found.append({"manifest": path, "block": block, **entry})
    return found


def _ours(pid: int, command: str) -> bool:
    """The pid still runs the program we started (pids are reused: never kill a stranger)."""
    try:
        cmdline = psutil.Process(pid).cmdline()
    except psutil.Error:
        return False
    argv0 = shlex.split(command)[0] if command else ""
    return bool(cmdline) and (cmdline[0] == argv0 or Path(cmdline[0]).name == Path(argv0).name)


def stop_server(entry: dict) -> str:
    pid, command = entry.get("pid"), entry.get("command", "")
    if command.startswith("docker run") and "--name" in command and shutil.which("docker"):
        name = shlex.split(command)[shlex.split(command).index("--name") + 1]
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        outcome = f"container {name} removed"
    elif " up -d --no-deps" in command and " -p " in command and shutil.which("docker"):
        outcome = _remove_compose_project(command)
    elif pid and _ours(pid, command):
        try:
            os.killpg(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
        try:
            psutil.Process(pid).wait(15)
        except psutil.TimeoutExpired:
            os.killpg(pid, signal.SIGKILL)
        except psutil.Error:
            pass
        outcome = f"pid {pid} stopped"
    else:
        outcome = "already gone"
    if entry.get("port") and not wait_port_free(entry.get("host", "127.0.0.1"), entry["port"], 15):
        return f"{outcome}; port {entry['port']} still held by {holder(entry['port']) or 'unknown'}"
    mark_stopped(entry["manifest"], entry["block"])
    return f"{outcome}; port {entry.get('port')} is free"


def _remove_compose_project(command: str) -> str:
    """A compose launcher's engine: every container of its project (the workers' too), by label."""
    words = shlex.split(command)
    project = words[words.index("-p") + 1]
    label = f"label=com.docker.compose.project={project}"
    ids = subprocess.run(
        ["docker", "ps", "-aq", "--filter", label], capture_output=True, text=True
    ).stdout.split()
    if ids:
        subprocess.run(["docker", "rm", "-f", *ids], capture_output=True)
    return f"compose project {project}: {len(ids)} container(s) removed"


def mark_stopped(manifest: Path, block: str) -> None:
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["engines"][block]["running"] = False
    tmp = manifest.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(manifest)


def du(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path, onerror=lambda _e: None):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def disk_table(paths: list[Path]) -> list[tuple[str, int]]:
    return [(str(p), du(p)) for p in paths if p.exists()]


def remove_checkpoint(path: Path, library: Path, log: Path) -> dict:
    """Remove one checkpoint inside the model library, and record what went."""
    path, library = path.resolve(), library.resolve()
    if library not in path.parents:
        raise ValueError(f"{path} is not inside the model library {library}; name one checkpoint there")
    size = du(path) if path.is_dir() else path.stat().st_size
    shutil.rmtree(path) if path.is_dir() else path.unlink()
    record = {"record": "cleanup", "removed": str(path), "bytes": size, "at": now_stamp()}
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
    return record
