"""Memory as this machine reports it, in MB (1 MB = 1,000,000 bytes), from every source present:
psutil (MemAvailable on Linux), nvidia-smi (device and per process), rocm-smi (VRAM and GTT) and
macOS vm_stat. A snapshot before the server starts and one while it is loaded give what it added."""

from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
from typing import Callable

import psutil

from harness.records.engine import READINGS, SNAPSHOT, MemorySnapshot
from harness.records.clock import now_stamp
from harness.endpoints import shim_host

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


# What nvidia-smi prints in a number's place when the device does not report it (a GB10 says both).
NOT_REPORTED = ("[N/A]", "N/A", "[Not Supported]", "Not Supported")


def nvidia_readings(gpu: str | None, apps: str | None) -> dict:
    """Device used/total (MiB as nvidia-smi prints them) and the per-process sum, from
    ``--query-gpu=memory.used,memory.total`` and ``--query-compute-apps=pid,used_memory`` (csv,
    noheader, nounits). A GB10 prints ``[N/A]`` for the device: None, and a note saying why. An
    answer that is not two figures is no figure, and a note quoting it. WSL2 and some devices list
    no process: no per-process figure rather than 0."""
    if not gpu:
        return {}
    used, _, total = (cell.strip() for cell in gpu.splitlines()[0].partition(","))
    out: dict = {READINGS.gpu_used_mb: _float(used), READINGS.gpu_total_mb: _float(total)}
    if used in NOT_REPORTED or total in NOT_REPORTED:
        out[READINGS.unread] = [
            f"nvidia-smi reports no device memory ({used}, {total}): a unified-memory GPU such as GB10 "
            "takes it from the host, so mem_available_mb is the figure"
        ]
    elif None in (out[READINGS.gpu_used_mb], out[READINGS.gpu_total_mb]):
        return {READINGS.unread: [f"nvidia-smi's memory.used,memory.total was not two figures: {gpu[:80]!r}"]}
    per_process = [_float(line.split(",")[-1]) for line in (apps or "").splitlines() if "," in line]
    known = [v for v in per_process if v is not None]
    if known:
        out[READINGS.gpu_process_mb] = sum(known)
    return out


def rocm_readings(text: str | None) -> dict:
    """VRAM and GTT used over every card, MB, from ``rocm-smi --showmeminfo vram gtt --json``."""
    if not text:
        return {}
    try:
        cards = json.loads(text)
    except json.JSONDecodeError:
        return {READINGS.unread: [f"rocm-smi --showmeminfo vram gtt --json gave no JSON: {text[:80]!r}"]}
    cards = [c for c in cards.values() if isinstance(c, dict)] if isinstance(cards, dict) else []
    return {
        READINGS.rocm_vram_used_mb: sum(_float(c.get("VRAM Total Used Memory (B)")) or 0 for c in cards) / MB,
        READINGS.rocm_gtt_used_mb: sum(_float(c.get("GTT Total Used Memory (B)")) or 0 for c in cards) / MB,
    }


_UNITS = {"B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def mac_swap_used_mb(text: str | None) -> float | None:
    """Swap in use, MB, from ``sysctl -n vm.swapusage`` (``total = 2048.00M  used = 1126.25M ...``)."""
    m = re.search(r"used\s*=\s*([\d.]+)([BKMGT])", text or "")
    return round(float(m.group(1)) * _UNITS[m.group(2)] / MB, 1) if m else None


def _here() -> dict:
    """This machine's figures in the shape of the host-side shim's ``GET /v1/host``."""
    vm, swap = psutil.virtual_memory(), psutil.swap_memory()
    return {
        "system": platform.system(),
        "machine": platform.machine(),
        "node": platform.node(),
        "total_bytes": vm.total,
        "available_bytes": vm.available,
        "swap_used_bytes": swap.used,
        "swap_free_bytes": swap.free,
    }


def snapshot(run: Callable[[list[str]], str | None] | None = None, host: dict | None = None) -> dict:
    """A memory-snapshot record of this machine now (every source present). ``run`` answers a
    command's output or None (default: run it here), so each source is tested on recorded output.
    ``host``: the host-side shim's facts (harness.endpoints.shim_host) in place of this machine's, for a
    harness in a container whose engines run on the shim's host."""
    run = run or _run
    facts = host or _here()
    taken_at = now_stamp()
    snap: dict = {READINGS.swap_used_mb: round((facts["swap_used_bytes"] or 0) / MB, 1)}  # then each source
    unread: list[str] = []
    gpu = run(["nvidia-smi", "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits"])
    if gpu:
        apps = run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"])
        found = nvidia_readings(gpu, apps)
        unread += found.pop(READINGS.unread, [])
        snap.update(found)
    found = rocm_readings(run(["rocm-smi", "--showmeminfo", "vram", "gtt", "--json"]))
    unread += found.pop(READINGS.unread, [])
    snap.update(found)
    if unread:
        snap[READINGS.unread] = unread
    vmstat = run(["vm_stat"])
    if vmstat:  # a Mac: the lab reads its pages, and its swap from sysctl
        snap.update(mac_pages(vmstat))
        swap_used = mac_swap_used_mb(run(["sysctl", "-n", "vm.swapusage"]))
        if swap_used is not None:
            snap[READINGS.mac_swap_used_mb] = swap_used
    system = f"{facts['system']} {facts['machine']}"
    total, available, swap_free = (
        (facts[k] or 0) / MB for k in ("total_bytes", "available_bytes", "swap_free_bytes")
    )
    return MemorySnapshot(taken_at, system, facts["node"], total, available, swap_free, snap).to_dict()


# vm_stat rows that make up each macOS figure; "used" is active + wired + compressed pages.
MAC_ROWS = {
    READINGS.mac_free_mb: ("Pages free",),
    READINGS.mac_wired_mb: ("Pages wired down",),
    READINGS.mac_compressed_mb: ("Pages occupied by compressor",),
    READINGS.mac_used_mb: ("Pages active", "Pages wired down", "Pages occupied by compressor"),
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
    READINGS.gpu_used_mb,
    READINGS.gpu_process_mb,
    READINGS.rocm_vram_used_mb,
    READINGS.rocm_gtt_used_mb,
    READINGS.mac_wired_mb,
    READINGS.mac_used_mb,
    READINGS.swap_used_mb,
    READINGS.mac_swap_used_mb,
)


def delta(idle: dict, loaded: dict) -> dict:
    """What the server added, per source present in both snapshots."""
    added: dict[str, int] = {}
    pairs = {name: (idle.get(name), loaded.get(name)) for name in (SNAPSHOT.mem_available_mb, *GROWING)}
    if pairs[READINGS.gpu_process_mb][0] is None and idle.get(READINGS.gpu_total_mb):
        pairs[READINGS.gpu_process_mb] = (
            0.0,
            pairs[READINGS.gpu_process_mb][1],
        )  # nvidia-smi listed no process at idle
    for name, (before, after) in pairs.items():
        if before is None or after is None:
            continue
        added[name] = round(before - after) if name == SNAPSHOT.mem_available_mb else round(after - before)
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


def _size_mb(text: str) -> float | None:
    """``7.812GiB``, ``512MiB``, ``1.2GB`` or ``800kB`` (docker's units) in MB."""
    m = re.fullmatch(r"\s*([\d.]+)\s*([kKMGT]?)(i?)B\s*", text)
    if not m:
        return None
    power = " KMGT".index(m.group(2).upper() or " ")
    return float(m.group(1)) * (1024 if m.group(3) else 1000) ** power / MB


def docker_stats_mb(text: str | None) -> float | None:
    """The container's memory (its cgroup's usage, less page cache) from
    ``docker stats --no-stream --format '{{.MemUsage}}' NAME`` (``7.812GiB / 119.7GiB``)."""
    used = (text or "").strip().splitlines()[0].split("/")[0] if (text or "").strip() else ""
    return _size_mb(used) if used else None


def docker_top_rss(text: str | None) -> dict:
    """Processes and their summed resident set (MB) inside a container, from
    ``docker top NAME -eo pid,rss,args`` (ps's RSS column is KiB); {} when the output has no RSS column."""
    rows = [line.split(None, 2) for line in (text or "").strip().splitlines()]
    if not rows or len(rows[0]) < 2 or rows[0][1].upper() != "RSS":
        return {}
    rss = [int(r[1]) for r in rows[1:] if len(r) >= 2 and r[1].isdigit()]
    return {"processes": len(rss), "rss_mb": round(sum(rss) * 1024 / MB)} if rss else {}


def container_memory(name: str, run: Callable[[list[str]], str | None] | None = None) -> dict:
    """A container engine's own memory, not the docker client's: the cgroup figure ``docker stats``
    reports and the summed RSS of the processes ``docker top`` lists; {} when docker does not answer."""
    run = run or _run
    out: dict = {}
    usage = docker_stats_mb(run(["docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", name]))
    if usage is not None:
        out["container_mb"] = round(usage)
    out.update(docker_top_rss(run(["docker", "top", name, "-eo", "pid,rss,args"])))
    return {"container": name, **out} if out else {}


def host_snapshot() -> dict:
    """A memory snapshot of the engines' host: through the host-side shim where one is named
    (``HARNESS_SHIM_URL``), else of this machine."""
    found = shim_host.facts()
    return snapshot() if found is None else snapshot(shim_host.answers(found), host=found)
