"""The machine table (bandwidth, memory) and a measured bandwidth when the machine is not in it."""

from __future__ import annotations

import time
from pathlib import Path

import yaml

from harness import paths
from harness.errors import ConfigError
from harness.io.notebook import validate

TABLE = paths.data_file("machines.yaml")
VISIBLE = paths.data_file("visible_memory.yaml")


def load_machines(path: Path = TABLE) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    validate(data, "machines", where=str(path))
    return data["machines"]


def lookup(key: str, path: Path = TABLE) -> dict:
    machines = load_machines(path)
    if key not in machines:
        raise ConfigError(
            f"machine {key!r} is not in {path}; use one of {', '.join(machines)} or add it there"
        )
    return machines[key]


def visible_memory_rules(path: Path = VISIBLE) -> dict:
    """Engine name -> what its memory source sees of weights and cache (engine comparison, Task 9)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    validate(data, "visible-memory", where=str(path))
    return data["engines"]


def measure_copy_bandwidth(size_mib: int = 256, repeats: int = 5) -> float:
    """GB/s of one thread copying a large buffer (bytes read + written), best of ``repeats``.

    One thread rarely saturates a memory system, so this is a lower bound on the machine's
    bandwidth: good enough to sanity-check a speed limit, not to replace the vendor's figure.
    """
    size = size_mib * 1024 * 1024
    src = bytearray(b"\x5a") * size
    dst = bytearray(size)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        dst[:] = src
        best = min(best, time.perf_counter() - t0)
    return 2 * size / best / 1e9
