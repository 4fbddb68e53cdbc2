"""Cleanup by our own records: every server a track run started and did not stop (its manifest
says ``running`` with a pid, or a container name), stopped; every port it used proven free; what
each install made (``harness/data/installs.yaml``: environments, builds, models, images), with its
size and the command that removes it, listed; one named checkpoint removed only on request."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Callable

import psutil
import yaml

from harness import paths
from harness.records.clock import now_stamp
from harness.records.manifest import CUT, ENGINE, MANIFEST
from harness.engines.ports import holder, wait_port_free


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
        for block, entry in data.get(MANIFEST.engines, {}).items():
            if entry.get(ENGINE.running):
                found.append({"manifest": path, "block": block, **entry})
    return found


def cut_runs(runs_root: Path) -> list[str]:
    """One line for each run under ``runs_root`` that was cut (its manifest says running, its
    runner is gone): the step it was cut in, and the command that finishes it."""
    from harness.run.manifest import cut_of

    lines = []
    for path in manifests(runs_root):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            cut = cut_of(data)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if cut is not None:
            where = f"in step {cut[CUT.step]}" if cut[CUT.step] else "between two steps"
            lines.append(
                f"{path.parent}: cut {where}; finish it with harness track {data.get('plan_file')} "
                f"--run-dir {path.parent} --resume"
            )
    return lines


def _ours(pid: int, command: str) -> bool:
    """The pid still runs the program we started (pids are reused: never kill a stranger)."""
    try:
        cmdline = psutil.Process(pid).cmdline()
    except psutil.Error:
        return False
    argv0 = shlex.split(command)[0] if command else ""
    return bool(cmdline) and (cmdline[0] == argv0 or Path(cmdline[0]).name == Path(argv0).name)


def stop_server(entry: dict) -> str:
    pid, command = entry.get(ENGINE.pid), entry.get(ENGINE.command, "")
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
    if entry.get(ENGINE.port) and not wait_port_free(
        entry.get(ENGINE.host, "127.0.0.1"), entry[ENGINE.port], 15
    ):
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
    data[MANIFEST.engines][block][ENGINE.running] = False
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


# -- what each install made ---------------------------------------------------------------------------
INSTALLS = paths.data_file("installs.yaml")


def load_installs(path: Path = INSTALLS) -> list[dict]:
    """``harness/data/installs.yaml``, checked against its schema."""
    from harness.records.notebook import validate

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    validate(data, "installs", where=str(path))
    return data["installs"]


def install_variables(models: Path, env: dict | None = None) -> dict:
    """What the table's paths name: the home folder, this checkout, the model library, and the NVIDIA track's
    vLLM environment and TabbyAPI checkout (the environment's, else the track plan's lab.env value)."""
    from harness.engines.command_line import expand_vars
    from harness.run.plans import load_plan

    env = dict(os.environ if env is None else env)
    out = {"HOME": str(Path.home()), "CHECKOUT": str(paths.workdir()), "LIBRARY": str(models)}
    track_n = load_plan("track-n").variables
    for key in ("VLLM_VENV", "TABBY_DIR"):
        out[key] = env.get(key) or str(expand_vars(track_n[key], out))
    return out


def image_tags(repository: str) -> list[tuple[str, int]] | None:
    """Each tag of a Docker image repository here with its size in bytes; None without a Docker engine."""
    if not shutil.which("docker"):
        return None
    try:
        done = subprocess.run(
            ["docker", "image", "ls", repository, "--format", "{{.Repository}}:{{.Tag}}"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    out = []
    for tag in done.stdout.split():
        size = subprocess.run(
            ["docker", "image", "inspect", tag, "--format", "{{.Size}}"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.strip()
        out.append((tag, int(size) if size.isdigit() else 0))
    return out


def _size(path: Path) -> int:
    return du(path) if path.is_dir() else path.stat().st_size


def _row(
    entry: dict, where: str, size: int | None, remove: str, present: bool | None, note: str = ""
) -> dict:
    return {
        "made_by": entry["made_by"],
        "what": entry["what"],
        "where": where,
        "bytes": size,
        "remove": remove,
        "present": present,
        "note": note,
    }


def _library_rows(entry: dict, library: Path) -> list[dict]:
    from harness.engines.models.download_table import load_table

    rows = []
    for fmt in load_table()["formats"].values():
        if not fmt.get("dir"):  # Lemonade's copy lives in its own store (its own entry)
            continue
        folder = library / fmt["dir"]
        if folder.exists():
            rows.append(_row(entry, str(folder), _size(folder), f"rm -r {folder}", True, fmt["title"]))
    return rows or [_row(entry, f"{library}/<owner>/<repo>", None, entry["remove"], False)]


def _expand(text: str, variables: dict) -> str:
    from harness.engines.command_line import expand_vars

    return str(expand_vars(text, variables))


def _entry_rows(entry: dict, variables: dict, tags: Callable[[str], list | None]) -> list[dict]:
    if entry.get("library"):
        return _library_rows(entry, Path(variables["LIBRARY"]))
    if "image" in entry:
        found = tags(entry["image"])
        if found is None:
            return [
                _row(
                    entry,
                    entry["image"],
                    None,
                    f"docker image rm {entry['image']}:<tag>",
                    None,
                    "no Docker engine here",
                )
            ]
        if not found:
            return [_row(entry, entry["image"], None, f"docker image rm {entry['image']}:<tag>", False)]
        return [_row(entry, tag, size, f"docker image rm {tag}", True) for tag, size in found]
    if "lemonade" in entry:
        here = shutil.which("lemonade") is not None
        note = "in Lemonade's own store: `lemonade list` shows it" if here else "no lemonade CLI here"
        return [_row(entry, f"lemonade: {entry['lemonade']}", None, entry["remove"], None, note)]
    path = Path(_expand(entry["path"], variables)).expanduser()
    present = path.exists() or path.is_symlink()
    size = None
    note = ""
    if path.is_symlink():
        note = f"a link to {os.path.realpath(path)}: the remove command removes the link only"
        size = _size(path) if path.exists() else None
    elif present:
        size = _size(path)
    return [_row(entry, str(path), size, _expand(entry["remove"], variables), present, note)]


def installs_made(
    models: Path,
    entries: list[dict] | None = None,
    variables: dict | None = None,
    tags: Callable[[str], list | None] = image_tags,
) -> list[dict]:
    """Every install's products, one row each: where, bytes (None: not read), the command that
    removes it, and whether it is here (``present``: None when this machine cannot tell)."""
    variables = variables or install_variables(models)
    return [row for entry in entries or load_installs() for row in _entry_rows(entry, variables, tags)]
