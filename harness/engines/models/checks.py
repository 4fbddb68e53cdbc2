"""What a fetched model is checked against: the SHA-256 and size the hub publishes for a file,
the quantisation a ``config.json`` must state, and the files and bytes under a folder."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import requests

from harness.errors import InstallError
from harness.endpoints.http_client import auth_headers

DEFAULT_HUB = "https://huggingface.co"


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
