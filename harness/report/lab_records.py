"""What the labs ask the learner to record beyond the curves, from the records: the vLLM
memory-fraction change from A to B set against the pool change the fraction predicts (serving lab,
the comparison), the admission recommendation, and the lines the labs read in an engine's log
after it starts (TensorRT-LLM's guided decoder line)."""

from __future__ import annotations

from pathlib import Path

from harness.engines import logs as engine_logs
from harness.sizing.memory_fraction import visible_total_gib
from harness.sizing.predictions import fraction_change
from harness.errors import HarnessError
from harness.engines.definitions import load_engine
from harness.sizing.machines import lookup
from harness.report.markdown import table
from harness.report.measured import plan_machine
from harness.records.sizing import ADMISSION, AdmissionRecommendation
from harness.report.run_inputs import RunInputs


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
        seen = rec.get("observed") or {}
        # a GPU build's "Available KV cache memory", else the CPU build's "Auto set (X/total) GiB"
        gib = seen.get("available_kv_gib", seen.get("cpu_kv_gib"))
        fraction = _fraction_of(r.plan, rec.get("label", ""))
        if gib is not None and fraction is not None:
            start = {"label": rec["label"], "fraction": fraction, "available_kv_gib": float(gib)}
            if seen.get("memory_total_gib") is not None:  # vLLM's CPU build names the total it took
                start["memory_total_gib"] = float(seen["memory_total_gib"])
            out.append(start)
    return sorted(out, key=lambda s: s["fraction"])


def visible_total(r: RunInputs) -> tuple[float, str] | None:
    """The GPU-visible total of the device line the run's preflight read (``llama-server
    --list-devices``, kept in the manifest with the accelerator finding), in GiB; None without one."""
    texts = [
        f.get("text", "").replace("; ", "\n")
        for step in r.steps_of("preflight")
        for f in (step.get("result") or {}).get("findings") or []
        if f.get("check") == "accelerator" and f.get("level") == "PASS"
    ]
    return visible_total_gib(engine_logs.device_memory("\n".join(texts)))


def _fraction_total(
    a: dict, b: dict, machine: dict | None, visible: tuple[float, str] | None = None
) -> tuple[float, str] | None:
    """The total memory a fraction is a share of, in GiB, and where it comes from: the total the
    engine's own log names (vLLM's CPU build: this machine's memory as its worker counts it), else
    the GPU-visible total the device line reported (the serving lab: the pool comes out of the
    visible share, not the machine's total), else the plan's machine's memory; None when none is
    known."""
    if a.get("memory_total_gib") is not None and a.get("memory_total_gib") == b.get("memory_total_gib"):
        return a["memory_total_gib"], "the memory vLLM's CPU worker counts on this machine, from its log"
    if visible is not None:
        return visible
    if machine and machine.get("memory_gb"):
        return float(machine["memory_gb"]) * 1e9 / 2**30, machine["name"]
    return None


def fraction_section(r: RunInputs) -> list[str]:
    starts = fraction_starts(r)
    if len(starts) < 2:
        planned = [b for b in getattr(r.plan, "blocks", {}) if _fraction_of(r.plan, b) is not None]
        if len(planned) < 2:
            return []  # the plan compares no two memory fractions
        read = ", ".join(s["label"] for s in starts) or "none"
        return [
            "## vLLM memory fraction, A to B",
            "",
            f"_No fraction change: the plan starts {', '.join(planned)} at their memory fractions, and the "
            f"KV memory each had was read for {read} (no verify-allocation record of a log line naming "
            "it: the block skipped or failed, or its log printed no such line)._",
            "",
        ]
    key = plan_machine(r.plan)
    machine = lookup(key) if key else None
    lines = ["## vLLM memory fraction, A to B", ""]
    a, b = starts[0], starts[-1]
    seen = (
        f"{a['label']} at {a['fraction']:g}: {a['available_kv_gib']:.2f} GiB available for the KV cache; "
        f"{b['label']} at {b['fraction']:g}: {b['available_kv_gib']:.2f} GiB"
    )
    found = _fraction_total(a, b, machine, visible_total(r))
    if found is None:
        return lines + [f"{seen}. No total memory for the plan's machine, so no predicted change.", ""]
    total, source = found
    got = fraction_change(a, b, total)
    share = f" ({got['share']:.2f} of it)" if got["share"] is not None else ""
    step = f"({b['fraction']:g} - {a['fraction']:g}) x {total:.2f} GiB ({source})"
    return lines + [
        f"{seen}. The pool changed by {got['measured_gib']:+.2f} GiB; {step} = {got['predicted_gib']:+.2f} "
        f"GiB predicted{share}: the weights and activations do not change, so the pool moves by the "
        "fraction's difference of the total.",
        "",
    ]


def log_lines(started: dict) -> list[str]:
    """The lines the labs read in an engine's log after it starts (its definition's ``log_expect``),
    found or not, per block."""
    out = []
    for bid, e in started.items():
        try:
            expects = load_engine(e["engine"]).get("log_expect") or []
        except (HarnessError, KeyError):
            continue
        log = Path(e.get("log") or "")
        if not expects:
            continue
        text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
        for found, says, line in engine_logs.expected_lines(text, expects):
            out.append(
                f"- {bid}'s log shows `{line}`: {says}"
                if found
                else f"- {bid}'s log has no line matching `{line}` ({log.name or 'no log'}): so it is not "
                f"shown that {says}"
            )
    return out + ([""] if out else [])


def admission_section(r: RunInputs) -> list[str]:
    """Each admission recommendation the run recorded (the serving lab's admission step): the
    level, how it was chosen, where the unacceptable region begins, what the mixed short/long run
    measured there."""
    from harness.records.base import is_admission

    latest = {rec[ADMISSION.label]: rec for rec in r.records("admission", is_admission)}
    if not latest:
        return []
    rows = []
    for a in map(AdmissionRecommendation.read, latest.values()):
        seen = a.confirmed
        measured = (
            f"{seen.prompt_set}: {seen.completed} done, {seen.failed} failed, TTFT p90 "
            f"{_s(seen.ttft_p90_s)}, TPOT p90 {_s(seen.tpot_p90_s)}"
            if seen
            else "no admission run at this level"
        )
        region = (
            f"c={a.unacceptable_from} ({a.unacceptable_why})"
            if a.unacceptable_from
            else "none measured above it"
        )
        level = "none" if a.level is None else f"c={a.level}"
        rows.append([a.source, level, a.method, region, measured, a.verdict, a.recommendation])
    head = [
        "curve",
        "admission level",
        "chosen by",
        "unacceptable from",
        "admission run",
        "verdict",
        "recommendation",
    ]
    return [
        "## Admission recommendation",
        "",
        "The level chosen below the unacceptable region, and the mixed short/long workload repeated "
        "there (kept in the notebook as `record: admission`, for the gateway project):",
        "",
        table(head, rows),
        "",
    ]


def _s(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f} s"


def release_lines(started: dict) -> list[str]:
    """The hand-over after each engine's stop (engines lab): whether its memory came back, per
    reading, or what was not returned with the lab's remedy."""
    from harness.engines.handover import summary

    out = []
    for bid, e in started.items():
        found = e.get("memory_release")
        if not found:
            continue
        out.append(
            f"- {bid}: **WARN** {found['warning']}" if found["warning"] else f"- {bid}: {summary(found)}"
        )
    return (["After each stop (the hand-over to the next engine):", "", *out, ""]) if out else []


def environments_section(r: RunInputs) -> list[str]:
    """The disk each Python environment takes on the NVIDIA track, as the plan's
    ``environments`` step measured it after the installs and the first starts (du -sh), and the space
    left beside them (df -h ~); nothing for a plan without that step."""
    steps = r.steps_of("environments")
    if not steps:
        return []
    found = [f for s in steps for f in (s.get("result") or {}).get("findings") or []]
    if not found:
        return ["## Python environments", "", f"_Not measured: {r.why_none('environments')}._", ""]
    return [
        "## Python environments",
        "",
        "Measured after the installs and the first starts (neither installer states the size):",
        "",
        *[f"- {f.get('level')}: {f.get('text')}" for f in found],
        "",
    ]
