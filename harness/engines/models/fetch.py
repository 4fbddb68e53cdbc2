"""Get the model in each format a track uses (``harness models``): run the download tools and
check what they brought.

Downloads go through the ``hf`` CLI into the seeds' library layout (``<library>/<owner>/<repo>``),
a single GGUF file is checked against the SHA-256 the hub publishes for it, multi-file formats are
checked by file count and ``config.json``, and Lemonade gets the exact file registered under a
``user.`` name. Each format fetched becomes a ``model-fetch`` record in the notebook. What to fetch
and the commands are ``harness.engines.models.download_table``'s; the checks ``harness.engines.models.checks``'.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import requests

from harness.records.engine import FetchResult, ModelFetch
from harness.records.clock import now_stamp
from harness.errors import InstallError
from harness.engines.models.download_table import hf_argv, lemonade_argv, listed, target
from harness.engines.models.checks import config_problems, dir_totals, hub_file_info, sha256_of
from harness.records.notebook import validate


Say = Callable[[str], None]


def run_tool(argv: list[str], say: Say) -> tuple[int, str]:
    """Run a download tool, passing its progress lines through; its output for the checks after."""
    if shutil.which(argv[0]) is None:
        hint = (
            "install the Hugging Face CLI: pip install -U 'huggingface_hub[cli]'"
            if argv[0] == "hf"
            else "install Lemonade Server first (the Ryzen track's install lesson)"
        )
        raise InstallError(f"{argv[0]} is not on PATH: {hint}")
    say("    $ " + " ".join(argv))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    lines = []
    for line in proc.stdout:  # universal newlines: a progress bar's bare \r ends a line too
        lines.append(line)
        say("      " + line.rstrip("\n"))
    return proc.wait(), "".join(lines)


def run_checked(argv: list[str], what: str, say: Say) -> str:
    """Run a download tool; its output, or InstallError naming ``what`` and the tool's last line."""
    rc, out = run_tool(argv, say)
    if rc != 0:
        raise InstallError(f"{what} failed (exit {rc}): " + (out.strip().splitlines() or ["no output"])[-1])
    return out


def _record(key: str, fmt: dict, **fields) -> dict:
    hub = fmt["kind"] != "lemonade"
    rec = ModelFetch(
        format=key,
        title=fmt["title"],
        source="hf" if hub else "lemonade",
        listed=listed(fmt),
        result=FetchResult(**fields),
        fetched_at=now_stamp(),
        repo=fmt["repo"] if hub else None,
        revision=fmt.get("revision", "main") if hub else None,
    ).to_dict()
    validate(rec, ModelFetch.KIND)
    return rec


def _move_aside(path: Path) -> Path:
    bad = path.with_name(path.name + ".corrupt")
    path.replace(bad)
    return bad


def fetch_file(key: str, fmt: dict, library: Path, say: Say, endpoint: str | None = None) -> dict:
    """One file (the GGUF): verify what is there, else download it, then verify the SHA-256."""
    path = target(fmt, library)
    sha, size, origin = _expected_checksum(fmt, say, endpoint)
    downloaded = False
    if path.is_file():
        _keep_if_verified(path, sha, say)
    if not path.is_file():
        _download_verified(fmt, library, path, sha, say)
        downloaded = True
    actual = path.stat().st_size
    if actual != size:
        raise InstallError(f"{path} is {actual} bytes, the hub lists {size}: delete it and run again")
    return _record(
        key,
        fmt,
        file=fmt["file"],
        path=str(path),
        files=1,
        bytes=actual,
        sha256=sha,
        sha256_from=origin,
        checks=[f"sha256 matches the {origin}'s", f"size {actual} bytes"],
        downloaded=downloaded,
    )


def _expected_checksum(fmt: dict, say: Say, endpoint: str | None) -> tuple[str, int, str]:
    """(sha256, size, origin): the hub's, else the table's when the hub does not answer."""
    try:
        sha, size = hub_file_info(fmt["repo"], fmt.get("revision", "main"), fmt["file"], endpoint)
        origin = "hub"
    except (requests.RequestException, ValueError) as exc:
        if "sha256" not in fmt:
            raise InstallError(
                f"cannot read {fmt['file']}'s checksum from the hub ({type(exc).__name__}) and the "
                "table has none: check the network and run again"
            ) from None
        sha, size, origin = fmt["sha256"], fmt["bytes"], "table"
        say(
            f"    the hub did not answer ({type(exc).__name__}); checking against the table's SHA-256 "
            f"(listed {fmt['sha256'][:12]}…)"
        )
    say(f"    expected sha256 {sha}\n    expected size   {size} bytes")
    if origin == "hub" and fmt.get("sha256") and fmt["sha256"] != sha:
        say(
            f"    note: the hub now publishes a different checksum than the table's ({fmt['sha256'][:12]}…): "
            "the file was updated upstream"
        )
    return sha, size, origin


def _keep_if_verified(path: Path, sha: str, say: Say) -> None:
    """Keep a file already there if its SHA-256 matches; else move it aside for a new download."""
    got = sha256_of(path)
    if got == sha:
        say(f"    already present and verified: {path}")
    else:
        bad = _move_aside(path)
        say(f"    {path} does not match (sha256 {got[:12]}…): moved aside to {bad.name}, downloading again")


def _download_verified(fmt: dict, library: Path, path: Path, sha: str, say: Say) -> None:
    """Download the file with ``hf`` and check its SHA-256; a mismatch is moved aside and raised."""
    run_checked(hf_argv(fmt, library), f"hf download {fmt['repo']} {fmt['file']}", say)
    if not path.is_file():
        raise InstallError(
            f"hf download finished but {path} is not there: check --local-dir and the file name"
        )
    got = sha256_of(path)
    if got != sha:
        bad = _move_aside(path)
        raise InstallError(
            f"checksum mismatch for {fmt['file']}: expected {sha}, got {got}; the download is "
            f"kept as {bad} for inspection: delete it and run again"
        )


def fetch_repo(key: str, fmt: dict, library: Path, say: Say) -> dict:
    """A multi-file repository (or one branch of it): download, then check files and config.json."""
    path = target(fmt, library)
    run_checked(hf_argv(fmt, library), f"hf download {fmt['repo']}", say)
    if not path.is_dir():
        raise InstallError(f"hf download finished but {path} is not there: check --local-dir")
    files, size = dir_totals(path)
    checks, problems = [], []
    if files < fmt["files"]:
        problems.append(f"{files} files, the hub listed {fmt['files']}")
    else:
        checks.append(f"{files} files (listed {fmt['files']})")
    if "safetensors" in fmt:
        shards = len(list(path.glob("*.safetensors")))
        (checks if shards == fmt["safetensors"] else problems).append(
            f"{shards} safetensors shards (expected {fmt['safetensors']})"
        )
    if "config" in fmt:
        cfg = path / "config.json"
        if not cfg.is_file():
            problems.append("no config.json")
        else:
            try:
                found = config_problems(json.loads(cfg.read_text(encoding="utf-8")), fmt["config"])
            except json.JSONDecodeError as exc:
                found = [f"config.json is not JSON ({exc.msg} at line {exc.lineno})"]
            if found:
                problems += [f"config.json: {p}" for p in found]
            else:
                checks.append("config.json: " + ", ".join(f"{k} {v}" for k, v in fmt["config"].items()))
    if problems:
        raise InstallError(
            f"{path}: " + "; ".join(problems) + ": run the download again (hf resumes) or check the revision"
        )
    return _record(
        key,
        fmt,
        file=None,
        path=str(path),
        files=files,
        bytes=size,
        sha256=None,
        sha256_from=None,
        checks=checks,
        downloaded=True,
    )


def fetch_lemonade(key: str, fmt: dict, say: Say) -> dict:
    """Register the exact file under a ``user.`` name and pull it, then prove it is listed."""
    pull, lst = lemonade_argv(fmt)
    run_checked(pull, f"lemonade pull {fmt['name']}", say)
    rc, out = run_tool(lst, say)
    if rc != 0 or fmt["name"] not in out:
        raise InstallError(
            f"{fmt['name']} is not in `lemonade list --downloaded`: the pull did not register it; "
            "run the pull again and read its output"
        )
    return _record(
        key,
        fmt,
        file=fmt["checkpoint"],
        path=fmt["name"],
        files=None,
        bytes=None,
        sha256=None,
        sha256_from=None,
        checks=[f"{fmt['name']} listed among the downloaded models"],
        downloaded=True,
    )


def fetch(key: str, fmt: dict, library: Path, say: Say, endpoint: str | None = None) -> dict:
    if fmt["kind"] == "file":
        return fetch_file(key, fmt, library, say, endpoint)
    if fmt["kind"] == "repo":
        return fetch_repo(key, fmt, library, say)
    return fetch_lemonade(key, fmt, say)
