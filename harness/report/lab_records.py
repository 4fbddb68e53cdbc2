"""What the labs ask the learner to record beyond the curves, from the records: the vLLM
memory-fraction change from A to B set against the pool change the fraction predicts (serving lab,
Task 9)."""

from __future__ import annotations

from harness.core.predictions import fraction_change
from harness.io.machines import lookup
from harness.report.measured import plan_machine
from harness.report.record_sections import RunInputs


def _fraction_of(plan, label: str) -> float | None:
    block = getattr(plan, "blocks", {}).get(label)
    value = (block.settings or {}).get("mem_fraction") if block is not None else None
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def fraction_starts(r: RunInputs) -> list[dict]:
    """Each memory-fraction start the notebook holds: its label, fraction and available KV memory."""
    out = []
    for rec in r.records("allocation", lambda o: o.get("record") == "allocation"):
        gib = (rec.get("observed") or {}).get("available_kv_gib")
        fraction = _fraction_of(r.plan, rec.get("label", ""))
        if gib is not None and fraction is not None:
            out.append({"label": rec["label"], "fraction": fraction, "available_kv_gib": float(gib)})
    return sorted(out, key=lambda s: s["fraction"])


def fraction_section(r: RunInputs) -> list[str]:
    starts = fraction_starts(r)
    if len(starts) < 2:
        return []
    key = plan_machine(r.plan)
    machine = lookup(key) if key else None
    lines = ["## vLLM memory fraction, A to B", ""]
    a, b = starts[0], starts[-1]
    seen = (
        f"{a['label']} at {a['fraction']:g}: {a['available_kv_gib']:.2f} GiB available for the KV cache; "
        f"{b['label']} at {b['fraction']:g}: {b['available_kv_gib']:.2f} GiB"
    )
    if not machine or not machine.get("memory_gb"):
        return lines + [f"{seen}. No total memory for the plan's machine, so no predicted change.", ""]
    total = float(machine["memory_gb"]) * 1e9 / 2**30
    got = fraction_change(a, b, total)
    share = f" ({got['share']:.2f} of it)" if got["share"] is not None else ""
    step = f"({b['fraction']:g} - {a['fraction']:g}) x {total:.2f} GiB ({machine['name']})"
    return lines + [
        f"{seen}. The pool changed by {got['measured_gib']:+.2f} GiB; {step} = {got['predicted_gib']:+.2f} "
        f"GiB predicted{share}: the weights and activations do not change, so the pool moves by the "
        "fraction's difference of the total.",
        "",
    ]
