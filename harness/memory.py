"""Memory as this machine reports it, in MB (1 MB = 1,000,000 bytes), from every source present:
psutil (MemAvailable on Linux), nvidia-smi (device and per process), rocm-smi (VRAM and GTT) and
macOS vm_stat. A snapshot before the server starts and one while it is loaded give what it added."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import time

import psutil

MB = 1e6


def _run(cmd: list[str]) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _float(text) -> float | None:
    try:
        return float(str(text).strip())
    except (TypeError, ValueError):
        return None


def snapshot() -> dict:
    vm, swap = psutil.virtual_memory(), psutil.swap_memory()
    snap: dict = {"taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "system": f"{platform.system()} {platform.machine()}", "hostname": platform.node(),
                  "mem_total_mb": vm.total / MB, "mem_available_mb": vm.available / MB, "swap_free_mb": swap.free / MB}
    gpu = _run(["nvidia-smi", "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits"])
    if gpu:
        used, _, total = gpu.splitlines()[0].partition(",")
        snap["gpu_used_mb"], snap["gpu_total_mb"] = _float(used), _float(total)  # MiB as nvidia-smi prints
        apps = _run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"])
        per_process = [_float(line.split(",")[1]) for line in (apps or "").splitlines() if "," in line]
        per_process = [v for v in per_process if v is not None]
        if per_process:  # WSL2 and some devices list nothing: record nothing rather than 0
            snap["gpu_process_mb"] = sum(per_process)
    rocm = _run(["rocm-smi", "--showmeminfo", "vram", "gtt", "--json"])
    if rocm:
        try:
            cards = json.loads(rocm)
        except json.JSONDecodeError:
            cards = {}
        cards = cards.values() if isinstance(cards, dict) else []
        snap["rocm_vram_used_mb"] = sum(_float(c.get("VRAM Total Used Memory (B)")) or 0 for c in cards) / MB
        snap["rocm_gtt_used_mb"] = sum(_float(c.get("GTT Total Used Memory (B)")) or 0 for c in cards) / MB
    vmstat = _run(["vm_stat"])
    if vmstat:
        page, pages = 4096, {}
        for line in vmstat.splitlines():
            if "page size of" in line:
                page = int(next((t for t in line.replace("(", " ").split() if t.isdigit()), page))
            key, _, value = line.partition(":")
            if value.strip().rstrip(".").isdigit():
                pages[key.strip()] = int(value.strip().rstrip("."))
        mb = lambda name: pages.get(name, 0) * page / MB  # noqa: E731
        snap["mac_free_mb"], snap["mac_wired_mb"] = mb("Pages free"), mb("Pages wired down")
        snap["mac_compressed_mb"] = mb("Pages occupied by compressor")
        snap["mac_used_mb"] = mb("Pages active") + snap["mac_wired_mb"] + snap["mac_compressed_mb"]
    return snap


def delta(idle: dict, loaded: dict) -> dict:
    """What the server added, per source (available memory counts down, the others up)."""
    out = {}
    if idle.get("mem_available_mb") is not None and loaded.get("mem_available_mb") is not None:
        out["mem_available_mb"] = round(idle["mem_available_mb"] - loaded["mem_available_mb"])
    for key in ("gpu_used_mb", "gpu_process_mb", "rocm_vram_used_mb", "rocm_gtt_used_mb", "mac_wired_mb",
                "mac_used_mb"):
        before = idle.get(key)
        if key == "gpu_process_mb" and before is None and idle.get("gpu_total_mb"):
            before = 0.0  # nvidia-smi answered at idle and listed no process
        if before is not None and loaded.get(key) is not None:
            out[key] = round(loaded[key] - before)
    return out


def process_rss_mb(pid: int | None) -> float | None:
    if not pid:
        return None
    try:
        return round(psutil.Process(pid).memory_info().rss / MB)
    except psutil.Error:
        return None
