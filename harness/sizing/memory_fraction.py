"""The serving lab's memory-fraction rule (on a unified-memory machine): lab.env's fractions assume the 128 GB
machine; on a smaller one, fraction x the GPU-visible total the device line reported (llama-server
--list-devices) must exceed the weights (15.26 GiB of bf16 for Qwen3-8B) with room for a pool; the
remedy, where it does not, is to raise both fractions by 0.2 and record the values.

Pure: fractions, the visible total and the weights in, (level, text) pairs out."""

from __future__ import annotations

from harness import lab

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

RAISE = lab.threshold("fraction_raise")  # the lab's remedy: raise both fractions by this
GIB = 2**30


def visible_total_gib(devices: list[dict]) -> tuple[float, str] | None:
    """The first device's total from its device line (``engine_logs.device_memory``), in GiB, and the
    line's device; None without one."""
    if not devices:
        return None
    d = devices[0]
    return d["total_mib"] / 1024, f"{d['device']} {d['total_mib']:,} MiB (the device line)"


def fraction_findings(
    fractions: dict[str, float],
    visible: tuple[float, str],
    weights_bytes: int,
    fmt: str,
    names: dict[str, str] | None = None,
) -> list[tuple[str, str]]:
    """Per fraction, PASS when fraction x the visible total exceeds the weights (the rest is the
    pool's room), else FAIL with the lab's remedy naming the raised values; ``names`` (label -> the
    plan variable that sets it) adds the ``--set`` that applies them when every fraction has one."""
    total, source = visible
    weights = weights_bytes / GIB
    out = []
    for label, f in fractions.items():
        share = f * total
        said = f"{label}: fraction {f:g} x {total:.2f} GiB visible ({source}) = {share:.2f} GiB"
        if share > weights:
            room = share - weights
            above = f"above the {weights:.2f} GiB of {fmt} weights ({room:.2f} GiB left)"
            out.append(("PASS", f"{said}, {above}"))
        else:
            raised = ", ".join(f"{k} {v + RAISE:.2f}" for k, v in fractions.items())
            if names and all(k in names for k in fractions):
                raised += ": " + " ".join(f"--set {names[k]}={v + RAISE:.2f}" for k, v in fractions.items())
            out.append(
                (
                    "FAIL",
                    f"{said}, not above the {weights:.2f} GiB of {fmt} weights: no room for a pool "
                    "(vLLM would log No available memory for the cache blocks); raise both fractions by "
                    f"{RAISE:g} ({raised}) and record the values",
                )
            )
    return out
