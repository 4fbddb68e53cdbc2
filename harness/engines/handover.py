"""The hand-over between engines (engines lab: "stop the previous engine before starting the next
on constrained hardware, confirm memory has been released and check which process owns the
requested port"), judged from readings taken before the engine started and after it stopped. Pure.

Two kinds of reading, each judged on its own:

- the engine's own (the launcher's memory reading): what its processes still hold after the stop
  (any process of its tree still alive, a container not removed), or for a service that stays up
  (Lemonade), its memory after the unload against before the load;
- the machine's: MemAvailable, and where present nvidia-smi's memory.used, rocm-smi's VRAM and GTT
  and vm_stat's used pages, after the stop against before the start.

A reading came back when what is left is within the tolerance: ``TOLERANCE_MB`` (MemAvailable:
``MEM_AVAILABLE_TOLERANCE_MB``, the whole machine's memory, which every other program moves: on a
shared 2-core machine it moved by up to about 500 MB while a 60 MB practice server ran) or
``TOLERANCE_SHARE`` of what the engine held at its stop, whichever is larger.
"""

from __future__ import annotations

from harness.records.engine import READINGS, SNAPSHOT
from harness.records.manifest import MemoryRelease

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

TOLERANCE_MB = 512.0
MEM_AVAILABLE_TOLERANCE_MB = 1024.0
TOLERANCE_SHARE = 0.10

# figure -> (its name in words, +1 when it grows as memory is taken, -1 when it shrinks)
MACHINE_FIGURES = {
    SNAPSHOT.mem_available_mb: ("MemAvailable", -1),
    READINGS.gpu_used_mb: ("nvidia-smi memory.used", 1),
    READINGS.rocm_vram_used_mb: ("rocm-smi VRAM used", 1),
    READINGS.rocm_gtt_used_mb: ("rocm-smi GTT used", 1),
    READINGS.mac_used_mb: ("vm_stat used pages", 1),
}

REMEDY = {
    "engine": "stop what is left of it before the next engine starts ({left}); then check which "
    "process owns the port",
    SNAPSHOT.mem_available_mb: "a process of the engine, or another program that grew meanwhile, holds it: "
    "find it (ps aux --sort=-rss | head), stop or close it, and take a fresh idle snapshot before "
    "measuring the next engine",
    READINGS.gpu_used_mb: "nvidia-smi --query-compute-apps=pid,used_memory --format=csv shows which "
    "process still holds the card's memory: stop it before the next engine starts",
    READINGS.rocm_vram_used_mb: "rocm-smi --showpids shows which process still holds the card's memory: "
    "stop it before the next engine starts",
    READINGS.rocm_gtt_used_mb: "rocm-smi --showpids shows which process still holds the card's memory: "
    "stop it before the next engine starts",
    READINGS.mac_used_mb: "other applications grew during the run or the engine left a process: close "
    "them (Activity Monitor, Memory), take a fresh idle snapshot and re-measure",
}


def tolerance_mb(held_mb: float | None, base: float = TOLERANCE_MB) -> float:
    """How much may stay unreturned: the larger of the fixed figure and a share of what was held."""
    return max(base, TOLERANCE_SHARE * (held_mb or 0.0))


def _engine_row(engine: dict, tolerance: float) -> dict | None:
    """The engine's own reading: ``left_mb`` (its processes or container after the stop; ``alive``
    how many of them are left), or for a service ``before_mb`` and ``after_mb``; None when nothing
    was read."""
    if engine.get("left_mb") is not None:
        left = float(engine["left_mb"])
        where = engine.get("left") or "nothing"
    elif engine.get("before_mb") is not None and engine.get("after_mb") is not None:
        left = float(engine["after_mb"]) - float(engine["before_mb"])
        where = (
            f"the service held {engine['before_mb']:.0f} MB before the load, {engine['after_mb']:.0f} after"
        )
    else:
        return None
    return {
        "source": "engine",
        "what": engine.get("what") or "the engine's processes",
        "left_mb": round(left, 1),
        "left": where,
        "alive": int(engine.get("alive") or 0),
        **({"watched": int(engine["watched"])} if engine.get("watched") is not None else {}),
        # a process of the engine still alive, or its container not removed, is never a hand-over
        # (what it holds on a card does not show in its resident set), however small
        "released": left <= tolerance and not engine.get("alive"),
    }


def judge(before: dict, after: dict, engine: dict, held_mb: float | None) -> dict:
    """Whether the memory came back, per reading: ``before`` and ``after`` are machine readings
    (``MACHINE_FIGURES`` keys, MB), ``engine`` the engine's own (``left_mb`` and ``left``, or
    ``before_mb`` and ``after_mb``; ``what``), ``held_mb`` what the engine held at its stop."""
    tolerance = tolerance_mb(held_mb)
    rows = []
    own = _engine_row(engine, tolerance)
    if own is not None:
        rows.append(own)
    for key, (name, sign) in MACHINE_FIGURES.items():
        b, a = before.get(key), after.get(key)
        if b is None or a is None:
            continue
        left = (a - b) * sign
        allowed = (
            tolerance_mb(held_mb, MEM_AVAILABLE_TOLERANCE_MB)
            if key == SNAPSHOT.mem_available_mb
            else tolerance
        )
        rows.append(
            {
                "source": key,
                "what": name,
                "before_mb": round(b, 1),
                "after_mb": round(a, 1),
                "left_mb": round(left, 1),
                "tolerance_mb": round(allowed, 1),
                "released": left <= allowed,
            }
        )
    kept = [r for r in rows if not r["released"]]
    return MemoryRelease(
        released=None if not rows else not kept,
        held_mb=None if held_mb is None else round(held_mb, 1),
        tolerance_mb=round(tolerance, 1),
        readings=rows,
        warning=warning(kept, tolerance, own is not None and own["released"]) if kept else None,
    ).to_dict()


def warning(kept: list[dict], tolerance: float, engine_gone: bool = False) -> str:
    """What was not returned, per reading, each with the lab's remedy (a machine figure short while
    no process of the engine is left: another program grew, or the engine left shared memory)."""
    parts = []
    for r in kept:
        remedy = REMEDY[r["source"]].format(left=r.get("left", ""))
        if engine_gone and r["source"] in (SNAPSHOT.mem_available_mb, READINGS.mac_used_mb):
            remedy = "no process of the engine is left, so another program grew meanwhile or it left shared "
            remedy += "memory behind (ls -la /dev/shm); " + REMEDY[r["source"]]
        allowed = r.get("tolerance_mb", tolerance)
        parts.append(
            f"{r['what']}: {r['left_mb']:.0f} MB not returned (tolerance {allowed:.0f} MB); {remedy}"
        )
    return "memory not released after the stop: " + "; ".join(parts)


def summary(result: dict) -> str:
    """The judgement in one line (the stop step's note)."""
    if result["released"] is None:
        return "no memory reading to compare"
    rows = ", ".join(f"{r['what']} {r['left_mb']:+.0f} MB" for r in result["readings"])
    verdict = "memory released" if result["released"] else "memory NOT released"
    extra = [f"{r['what']} {r['tolerance_mb']:.0f} MB" for r in result["readings"] if r.get("tolerance_mb")]
    extra = [x for x in extra if not x.endswith(f" {result['tolerance_mb']:.0f} MB")]
    also = f", {', '.join(extra)}" if extra else ""
    return f"{verdict} (left after the stop: {rows}; tolerance {result['tolerance_mb']:.0f} MB{also})"
