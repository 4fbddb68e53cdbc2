"""The download table (``harness/data/downloads.yaml``): which formats a track uses, where each
comes from, what the hub listed for it, and the commands that fetch it (``hf download``,
``lemonade pull``), as ``harness models --dry-run`` prints them. Pure apart from reading the table;
``harness.engines.models.fetch`` runs the commands and ``harness.engines.models.checks`` checks what came."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from harness import paths
from harness.errors import ConfigError
from harness.engines.models.checks import dir_totals
from harness.records.notebook import validate

TABLE = paths.data_file("downloads.yaml")


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
