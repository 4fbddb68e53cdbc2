"""Get the model in each format a track uses (``harness models``).

The table ``harness/data/downloads.yaml`` says where each format comes from and what the hub listed
for it. Downloads go through the ``hf`` CLI into the seeds' library layout (``<library>/<owner>/<repo>``),
a single GGUF file is checked against the SHA-256 the hub publishes for it, multi-file formats are
checked by file count and ``config.json``, and Lemonade gets the exact file registered under a
``user.`` name. Each format fetched becomes a ``model-fetch`` record in the notebook.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import requests
import yaml

from harness import paths
from harness.io.http import auth_headers
from harness.core.records import ModelFetch, iso_utc_stamp
from harness.errors import ConfigError, InstallError
from harness.io.notebook import validate

TABLE = paths.data_file("downloads.yaml")
DEFAULT_HUB = "https://huggingface.co"


def load_table(path: Path = TABLE) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    validate(data, "downloads", where=str(path))
    for track, keys in data["tracks"].items():
        for key in keys:
            if key not in data["formats"]:
                raise ConfigError(
                    f"{path}: track {track} names format {key!r}, which the table does not define"
                )
    return data


def formats_for(table: dict, track: str | None, only: list[str] | None) -> list[tuple[str, dict]]:
    """The formats to fetch: a track's list, optionally narrowed to ``only``."""
    if track is not None:
        key = track.lower().removeprefix("track-")
        if key not in table["tracks"]:
            raise ConfigError(
                f"no track {track!r} in the download table; choose one of "
                + ", ".join(sorted(table["tracks"]))
            )
        keys = list(table["tracks"][key])
    else:
        keys = list(table["formats"])
    if only:
        unknown = [k for k in only if k not in table["formats"]]
        if unknown:
            raise ConfigError(f"unknown format {unknown[0]!r}; choose from " + ", ".join(table["formats"]))
        keys = [k for k in keys if k in only] if track is not None else list(only)
    return [(k, table["formats"][k]) for k in keys]


def listed(fmt: dict) -> str:
    """What the hub listed for a format, in words: ``12 files, 6,114,568,235 bytes (6.1 GB)``."""
    files = fmt.get("files")
    count = f"{files} file{'s' if files != 1 else ''}, " if files else ""
    if "bytes" in fmt:
        return f"{count}{fmt['bytes']:,} bytes ({fmt['bytes'] / 1e9:.1f} GB)"
    return f"{count}{fmt['size']}" if "size" in fmt else count.rstrip(", ") or "size not listed"


_UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def approx_bytes(fmt: dict) -> float:
    """A format's listed size in bytes: exact where known, else read from hf's ``4.6G``."""
    if "bytes" in fmt:
        return float(fmt["bytes"])
    m = re.fullmatch(r"([0-9.]+)\s*([KMGT]?)B?", fmt.get("size", ""))
    return float(m[1]) * _UNITS[m[2]] if m else 0.0


def target(fmt: dict, library: Path) -> Path:
    return library / fmt["dir"] / fmt["file"] if fmt["kind"] == "file" else library / fmt.get("dir", "")


def hf_argv(fmt: dict, library: Path, dry_run: bool = False) -> list[str]:
    argv = ["hf", "download", fmt["repo"]]
    if fmt["kind"] == "file":
        argv.append(fmt["file"])
    if fmt.get("revision", "main") != "main":
        argv += ["--revision", fmt["revision"]]
    argv += ["--local-dir", str(library / fmt["dir"])]
    return argv + (["--dry-run"] if dry_run else [])


def lemonade_argv(fmt: dict) -> list[list[str]]:
    return [
        [
            "lemonade",
            "pull",
            fmt["name"],
            "--checkpoint",
            "main",
            fmt["checkpoint"],
            "--recipe",
            fmt["recipe"],
        ],
        ["lemonade", "list", "--downloaded"],
    ]


_DRY = re.compile(r"Will download (\d+) files? \(out of (\d+)\) totalling ([0-9.]+\s*[KMGT]?B?)")


def parse_hf_dry_run(text: str) -> dict | None:
    """``[dry-run] Will download 15 files (out of 15) totalling 16.4G.`` as numbers, or None."""
    m = _DRY.search(text)
    return {"files": int(m[1]), "out_of": int(m[2]), "total": m[3].strip()} if m else None


def hub_file_info(
    repo: str, revision: str, file: str, endpoint: str | None = None, timeout: float = 20.0
) -> tuple[str, int]:
    """The SHA-256 and size the hub publishes for one file of a repository (its LFS pointer)."""
    base = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_HUB).rstrip("/")
    headers = auth_headers(os.environ.get("HF_TOKEN"))
    url = f"{base}/api/models/{repo}/tree/{revision}"
    resp = requests.get(url, headers=headers, timeout=timeout)
    resp.raise_for_status()
    for entry in resp.json():
        if entry.get("path") == file:
            lfs = entry.get("lfs") or {}
            if "oid" not in lfs:
                raise InstallError(f"the hub lists {file} in {repo} without an LFS checksum")
            return lfs["oid"].removeprefix("sha256:"), int(lfs.get("size", entry.get("size", 0)))
    raise InstallError(f"the hub does not list {file} in {repo}@{revision}: check the file name")


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def _find(config, key):
    """Every value of ``key`` anywhere in a nested JSON object."""
    if isinstance(config, dict):
        for k, v in config.items():
            if k == key:
                yield v
            yield from _find(v, key)
    elif isinstance(config, list):
        for v in config:
            yield from _find(v, key)


def config_problems(config: dict, expected: dict) -> list[str]:
    """How ``config.json`` differs from what the format's quantisation must say (empty when it agrees)."""
    out = []
    for key, want in expected.items():
        found = list(_find(config, key))
        if not any(v == want for v in found):
            out.append(f'"{key}": {json.dumps(want)} not found' + (f" (found {found[0]!r})" if found else ""))
    return out


def dir_totals(path: Path) -> tuple[int, int]:
    """Files and bytes under ``path``, leaving out hf's own ``.cache`` bookkeeping."""
    files = size = 0
    for p in path.rglob("*"):
        if p.is_file() and ".cache" not in p.relative_to(path).parts:
            files += 1
            size += p.stat().st_size
    return files, size


Say = Callable[[str], None]


def run_tool(argv: list[str], say: Say) -> tuple[int, str]:
    """Run a download tool, passing its progress lines through; its output for the checks after."""
    if shutil.which(argv[0]) is None:
        hint = (
            "install the Hugging Face CLI: pip install -U 'huggingface_hub[cli]'"
            if argv[0] == "hf"
            else "install Lemonade Server first (the Track X install lesson)"
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
        result=fields,
        fetched_at=iso_utc_stamp(),
        repo=fmt["repo"] if hub else None,
        revision=fmt.get("revision", "main") if hub else None,
    ).to_dict()
    validate(rec, "model-fetch")
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


def plan_lines(key: str, fmt: dict, library: Path) -> list[str]:
    """What a dry run prints for one format: the commands, what the hub listed, and what is there now."""
    cmds = lemonade_argv(fmt) if fmt["kind"] == "lemonade" else [hf_argv(fmt, library)]
    lines = [f"{key}: {fmt['title']}", f"    listed: {listed(fmt)}"]
    lines += ["    would run: " + " ".join(c) for c in cmds]
    if fmt["kind"] == "file":
        lines.append(
            "    then: check the SHA-256 the hub publishes"
            + (f" (listed {fmt['sha256']})" if fmt.get("sha256") else "")
        )
    elif fmt["kind"] == "repo":
        then = [f"{fmt['files']} files"] + (
            [f"{fmt['safetensors']} safetensors shards"] if "safetensors" in fmt else []
        )
        then += [f"config.json {k} {v}" for k, v in fmt.get("config", {}).items()]
        lines.append("    then: check " + ", ".join(then))
    else:
        lines.append(f"    then: check {fmt['name']} is listed among the downloaded models")
    if fmt["kind"] != "lemonade":
        path = target(fmt, library)
        if path.exists():
            files, size = (1, path.stat().st_size) if path.is_file() else dir_totals(path)
            lines.append(f"    present: {path} ({files} files, {size:,} bytes); a real run checks it again")
        else:
            lines.append(f"    into: {path}")
    return lines
