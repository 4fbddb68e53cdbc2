"""Memory as this machine reports it, in MB (1 MB = 1,000,000 bytes), from every source present:
psutil (MemAvailable on Linux), nvidia-smi (device and per process), rocm-smi (VRAM and GTT) and
macOS vm_stat. A snapshot before the server starts and one while it is loaded give what it added."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess

import psutil

from harness.core.records import MemorySnapshot, utc_stamp

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
    """A memory-snapshot record of this machine now (every source present)."""
    vm, swap = psutil.virtual_memory(), psutil.swap_memory()
    taken_at = utc_stamp()
    snap: dict = {}  # the readings of whichever sources answer, in the order they are read
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
        snap.update(mac_pages(vmstat))
    system = f"{platform.system()} {platform.machine()}"
    return MemorySnapshot(
        taken_at, system, platform.node(), vm.total / MB, vm.available / MB, swap.free / MB, snap
    ).to_dict()


# vm_stat rows that make up each macOS figure; "used" is active + wired + compressed pages.
MAC_ROWS = {
    "mac_free_mb": ("Pages free",),
    "mac_wired_mb": ("Pages wired down",),
    "mac_compressed_mb": ("Pages occupied by compressor",),
    "mac_used_mb": ("Pages active", "Pages wired down", "Pages occupied by compressor"),
}


def mac_pages(vmstat: str) -> dict:
    """MB figures from ``vm_stat`` output (its first line states the page size)."""
    page_size = 4096
    counts: dict[str, int] = {}
    for row in vmstat.splitlines():
        name, _, rest = row.partition(":")
        digits = rest.strip().rstrip(".")
        if digits.isdigit():
            counts[name.strip()] = int(digits)
        elif "page size of" in row:
            sizes = [word for word in row.replace("(", " ").split() if word.isdigit()]
            page_size = int(sizes[0]) if sizes else page_size
    return {figure: sum(counts.get(r, 0) for r in rows) * page_size / MB for figure, rows in MAC_ROWS.items()}


# Figures that grow when a server loads (available memory is the one that shrinks).
GROWING = (
    "gpu_used_mb",
    "gpu_process_mb",
    "rocm_vram_used_mb",
    "rocm_gtt_used_mb",
    "mac_wired_mb",
    "mac_used_mb",
)


def delta(idle: dict, loaded: dict) -> dict:
    """What the server added, per source present in both snapshots."""
    added: dict[str, int] = {}
    pairs = {name: (idle.get(name), loaded.get(name)) for name in ("mem_available_mb", *GROWING)}
    if pairs["gpu_process_mb"][0] is None and idle.get("gpu_total_mb"):
        pairs["gpu_process_mb"] = (0.0, pairs["gpu_process_mb"][1])  # nvidia-smi listed no process at idle
    for name, (before, after) in pairs.items():
        if before is None or after is None:
            continue
        added[name] = round(before - after) if name == "mem_available_mb" else round(after - before)
    return added


def process_rss_mb(pid: int | None) -> float | None:
    if not pid:
        return None
    try:
        return round(psutil.Process(pid).memory_info().rss / MB)
    except psutil.Error:
        return None


def process_tree_mb(pid: int | None) -> dict:
    """Memory of a server and every process it started (vLLM: API server, engine core, worker and
    a helper), in MB: RSS summed (shared pages counted once per process) and PSS (shared pages split
    between their users: the tree's real share) where the OS gives it; {} without a live pid."""
    if not pid:
        return {}
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return {}
    rss = pss = 0
    have_pss = True
    for proc in procs:
        try:
            rss += proc.memory_info().rss
            pss += getattr(proc.memory_full_info(), "pss", 0)
        except psutil.AccessDenied:
            have_pss = False
        except psutil.Error:
            pass
    out = {"processes": len(procs), "rss_mb": round(rss / MB)}
    if have_pss and pss:
        out["pss_mb"] = round(pss / MB)
    return out
