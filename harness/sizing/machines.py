"""The machine table (bandwidth, memory) and a measured bandwidth when the machine is not in it."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml

from harness import paths
from harness.errors import ConfigError
from harness.records.notebook import validate

TABLE = paths.data_file("machines.yaml")
VISIBLE = paths.data_file("visible_memory.yaml")
FEATURES = paths.data_file("feature_settings.yaml")


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
    """Engine name -> what its memory source sees of weights and cache (the engine comparison)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    validate(data, "visible-memory", where=str(path))
    return data["engines"]


def feature_settings(path: Path = FEATURES) -> dict:
    """Engine name -> the setting that turns each API feature on (the engine comparison)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    validate(data, "feature-settings", where=str(path))
    return data["engines"]


def measure_copy_bandwidth(size_mib: int = 256, repeats: int = 5) -> float:
    """GB/s of one thread copying a large buffer (bytes read + written), best of ``repeats``: a lower
    bound (one thread rarely saturates a memory system); :func:`measure_bandwidth` uses every core."""
    size = size_mib * 1024 * 1024
    src = bytearray(b"\x5a") * size
    dst = bytearray(size)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        dst[:] = src
        best = min(best, time.perf_counter() - t0)
    return 2 * size / best / 1e9


@dataclass(frozen=True)
class Bandwidth:
    gb_s: float
    threads: int
    method: str


def measure_bandwidth(threads: int | None = None, size_mib: int | None = None, repeats: int = 3) -> Bandwidth:
    """Every core copying its own buffer at once (numpy's copy releases the GIL), bytes read plus
    written over the wall time of the slowest copy, best of ``repeats``. A copy also reads each
    destination line before writing it, which this count leaves out, so the figure stays below the
    vendor's: a lower bound, however close. About a second on a 2-core machine."""
    try:
        import numpy as np
    except ImportError:  # matplotlib brings numpy; without it, one thread is all we can time
        return Bandwidth(measure_copy_bandwidth(), 1, "one-thread copy (numpy absent)")
    n = threads or min(os.cpu_count() or 1, 32)
    size_mib = size_mib or max(16, 256 // n)  # about 512 MiB in all: well past any cache, small enough
    size = size_mib * 1024 * 1024
    buffers = [(np.full(size, 0x5A, np.uint8), np.empty(size, np.uint8)) for _ in range(n)]
    for src, dst in buffers:
        np.copyto(dst, src)  # touch every page before timing
    best = float("inf")
    for _ in range(repeats):
        start = threading.Barrier(n + 1)

        def copy(src, dst, start=start):
            start.wait()
            np.copyto(dst, src)

        workers = [threading.Thread(target=copy, args=pair) for pair in buffers]
        for w in workers:
            w.start()
        start.wait()
        t0 = time.perf_counter()
        for w in workers:
            w.join()
        best = min(best, time.perf_counter() - t0)
    return Bandwidth(2 * size * n / best / 1e9, n, f"{n}-thread copy of {size_mib} MiB each, read + written")


def _identity_texts(run: Callable[[list[str]], str | None]) -> list[str]:
    texts = [
        run(["sysctl", "-n", "machdep.cpu.brand_string"]),  # a Mac: "Apple M4 Max"
        run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]),  # "NVIDIA GB10", "... RTX 4090"
    ]
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        texts += [line for line in cpuinfo.read_text(errors="replace").splitlines() if "model name" in line][
            :1
        ]
    return [t for t in texts if t]


def identify(run: Callable[[list[str]], str | None] | None = None, path: Path = TABLE) -> str | None:
    """The machine-table key whose ``match`` text this machine's CPU or GPU name contains, or None."""
    texts = [t.lower() for t in _identity_texts(run or _run)]
    for key, m in load_machines(path).items():
        if any(pattern.lower() in text for pattern in m.get("match", []) for text in texts):
            return str(key)
    return None


def _run(cmd: list[str]) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def memory_for_tier(
    accelerator: str,
    run: Callable[[list[str]], str | None] | None = None,
    meminfo: Path = Path("/proc/meminfo"),
) -> tuple[float, str] | None:
    """(GiB, source) of the memory a plan's tier is sized by, read on a machine of the plan's kind:
    a Mac's ``sysctl -n hw.memsize`` for metal, an NVIDIA card's ``memory.total`` for nvidia, else
    Linux's ``MemTotal``; None where this machine is not of that kind (a Metal plan on Linux)."""
    run = run or _run
    if accelerator == "metal":
        text = run(["sysctl", "-n", "hw.memsize"])
        return (int(text.split()[-1]) / 2**30, "hw.memsize") if text and text.split()[-1].isdigit() else None
    if accelerator in ("nvidia", "cuda"):
        text = run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"])
        first = (text or "").splitlines()[0].strip() if text else ""
        return (float(first) / 1024, "nvidia-smi memory.total") if first.replace(".", "").isdigit() else None
    if meminfo.is_file():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20, "MemTotal"
    return None
