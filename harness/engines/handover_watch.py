"""The runner's side of the hand-over between engines: memory read just before an engine starts,
what it held just before its stop, and after the stop whether that memory came back (judged by
``harness.engines.handover``), re-read for up to ``RELEASE_WAIT_S`` while it has not.

The engine's own reading is the launcher's: for a process on this machine, every process of its
tree (read just before the stop) that is still alive after it; for a container, the container's
memory (none once it is removed); for a service that stays up (Lemonade), its memory after the
unload against before the load. The machine's reading is MemAvailable and, where present,
nvidia-smi's, rocm-smi's and vm_stat's figures (``harness.engines.memory.snapshot``). An external
endpoint is not ours to judge; an engine behind the shim runs on the shim's host, so only its own
reading counts."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import psutil

from harness.engines import handover
from harness.engines import memory
from harness.engines.ports import listener_pid

RELEASE_WAIT_S = 5.0
NOT_HERE = ("external",)  # launchers whose engine memory is not this machine's to judge
ELSEWHERE = ("shim",)  # launchers whose engine runs on another host: its own reading only


def machine_reading(snap: Callable[[], dict] = memory.snapshot) -> dict:
    """The machine figures the hand-over compares, MB, from every source present."""
    found = snap()
    return {k: float(found[k]) for k in handover.MACHINE_FIGURES if found.get(k) is not None}


def tree_pids(pid: int | None) -> list[int]:
    """A process and every process it started, while they run (empty without a live pid)."""
    if not pid:
        return []
    try:
        root = psutil.Process(pid)
        return [root.pid, *(p.pid for p in root.children(recursive=True))]
    except psutil.Error:
        return []


def _alive_rss(pids: list[int]) -> list[tuple[int, float]]:
    out = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            out.append((pid, proc.memory_info().rss / memory.MB))
        except psutil.Error:
            continue
    return out


@dataclass
class HandOver:
    """One engine's hand-over: ``started`` before its start, ``stopping`` just before its stop,
    ``stopped`` after it (the judgement, or None when there is nothing of ours to judge)."""

    kind: str  # the block's launcher kind
    before: dict = field(default_factory=dict)
    service_before_mb: float | None = None
    held_mb: float | None = None
    pids: list[int] = field(default_factory=list)

    @classmethod
    def started(cls, kind: str, launcher, port: int) -> HandOver | None:
        if kind in NOT_HERE:
            return None
        found = cls(kind, {} if kind in ELSEWHERE else machine_reading())
        if launcher.keeps_port:  # a service that stays up: its own memory before this model loads
            found.service_before_mb = memory.process_tree_mb(listener_pid(port)).get("rss_mb")
        return found

    def stopping(self, launcher, held_mb: float | None) -> None:
        self.held_mb = held_mb
        if not launcher.keeps_port and self.kind not in ELSEWHERE:
            self.pids = tree_pids(launcher.pid)

    def engine_reading(self, launcher) -> dict:
        """The engine's own reading after the stop (``harness.engines.handover.judge``'s ``engine``)."""
        if launcher.keeps_port:
            return {
                "what": "the service (its model unloaded)",
                "before_mb": self.service_before_mb,
                "after_mb": launcher.memory_mb(),
            }
        if self.pids:
            alive = _alive_rss(self.pids)
            left = ", ".join(f"pid {pid} still alive ({rss:.0f} MB): kill {pid}" for pid, rss in alive)
            return {
                "what": "the engine's processes",
                "left_mb": sum(rss for _, rss in alive),
                "alive": len(alive),
                "watched": len(self.pids),
                "left": left or "no process of it alive",
            }
        rest = launcher.memory_mb()  # a container: None once it is removed
        name = getattr(launcher, "container_name", None) or "its container"
        return {
            "what": "the engine's container" if self.kind in ("compose", "container") else "the engine",
            "left_mb": rest or 0.0,
            "alive": 1 if rest else 0,
            "left": f"{name} still holds {rest:.0f} MB: docker rm -f {name}" if rest else "nothing left",
        }

    def stopped(self, launcher, wait_s: float = RELEASE_WAIT_S) -> dict:
        deadline = time.monotonic() + wait_s
        while True:
            after = {} if self.kind in ELSEWHERE else machine_reading()
            result = handover.judge(self.before, after, self.engine_reading(launcher), self.held_mb)
            if result["released"] is not False or time.monotonic() >= deadline:
                return result
            time.sleep(0.5)


def planned(kind: str, keeps_port: bool) -> str:
    """What a stop checks of memory, for the dry run's stop line ("" where nothing is judged)."""
    if kind in NOT_HERE:
        return ""
    if keeps_port:
        return "; the service's memory after the unload compared with before the load"
    if kind in ELSEWHERE:
        return " and its memory released (the engine's own reading, on the shim's host)"
    gone = "its container" if kind == "compose" else "its processes"
    return f" and its memory released ({gone} gone, the machine's memory back)"


def stop_and_judge(found: HandOver | None, launcher, held_mb: float | None) -> dict | None:
    """Stop the engine (``launcher.stop()``: its port proven free) and, when its start was read
    (``found``), whether its memory came back; None when there is nothing of ours to judge."""
    if found is not None:
        found.stopping(launcher, held_mb)
    launcher.stop()
    return found.stopped(launcher) if found is not None else None


def release_line(result: dict) -> str:
    """The runner's line: the judgement, or a warning with the lab's remedy."""
    return f"    WARN  {result['warning']}" if result["warning"] else f"    {handover.summary(result)}"
