"""The run report's section "Measured against what bandwidth allows": each real curve's speed alone
against the speed limit and its peak against the predicted ceiling, then the engine comparison's explanation,
each absent with its reason when its inputs are (no machine, no model file, no records).

A rehearsal's stand-ins ran on this machine, not on the track's: where the plan's model is the
stand-in's own (Day 3's), its curves are set against this machine's bandwidth, measured when the
report is written, and the section says so and names the track machine's figure that the hardware
run uses; where the plan predicts for the track's model (Tracks S, N, X, M), the section is absent,
saying why."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from harness.records.base import is_engine_speed, is_features, is_level
from harness.errors import HarnessError
from harness.sizing.machines import (
    Bandwidth,
    feature_settings,
    lookup,
    measure_bandwidth,
    visible_memory_rules,
)
from harness.engines.models.info import load_model
from harness.records.notebook import read_records
from harness.report import limits
from harness.report.engine_tables import latest_per_engine
from harness.report.engine_verdicts import TITLE, Inputs, render
from harness.records.level import LEVEL, STATS


def plan_model(plan) -> str:
    """The model a plan predicts for (its first ``predict`` step naming one), else the course model."""
    for step in getattr(plan, "steps", []):
        model = step.options.get("model") if step.kind == "predict" else None
        if model:
            return str(model)
    return "qwen3-8b"


def mapped_mib(notebook: Path) -> float | None:
    """The last load log's ``MTL0_Mapped`` model buffer (Apple silicon's Metal llama-server), as
    verify-allocation recorded it; None on other machines."""
    found = None
    if not Path(notebook).is_file():
        return None
    for rec in read_records(notebook, "allocation", select=lambda o: o.get("record") == "allocation").records:
        value = ((rec.get("observed") or {}).get("model_buffers_mib") or {}).get("MTL0_Mapped")
        found = value if value is not None else found
    return found


def plan_machine(plan) -> str | None:
    """The plan's machine-table key: its ``MACHINE`` variable (a tier names its own machine: the NVIDIA
    track's 16 GB tier an RTX 4080, the Apple silicon track's an M4), else its ``machine``."""
    return (getattr(plan, "variables", {}) or {}).get("MACHINE") or getattr(plan, "machine", None)


def rehearsal_absent(model: str, machine_key: str | None) -> str:
    """Why a rehearsal whose stand-ins serve another model than the plan predicts for has no such
    section, and what the hardware run shows in it."""
    on = f" on {machine_key}" if machine_key else ""
    return (
        f"_Not computed in a rehearsal: this section's arithmetic is for the track's model ({model}){on}, "
        "and every figure above is a CPU stand-in's serving another model on this machine; side by side "
        "they would say nothing. On the hardware it sets each curve's speed alone against the speed "
        "limit (bandwidth / model size), its peak against the aggregate decode ceiling, and explains the "
        "engines' single-user differences._"
    )


def rehearsal_bandwidth(machine: dict | None, measured: Bandwidth) -> tuple[float, str, list[str]]:
    """A rehearsal's bandwidth (this machine's, measured), its label for the comparison's table, and the
    lines that open the section saying why it is not the track machine's figure."""
    track = (
        f"{machine['name']}'s {float(machine['bandwidth_gb_s']):g} GB/s, which the hardware run uses"
        if machine
        else "the track machine's figure on the hardware"
    )
    gb_s = round(measured.gb_s, 1)  # a copy's timing: more digits would claim a precision it lacks
    return (
        gb_s,
        f"this machine, {gb_s:g} GB/s measured",
        [
            f"A rehearsal: the stand-ins ran on this machine's CPU, so each figure below is set against "
            f"this machine's memory bandwidth, {gb_s:g} GB/s measured when this report was "
            f"written ({measured.method}; a lower bound), not against {track}.",
            "",
        ],
    )


def section(notebook: Path, plan, measure: Callable[[], Bandwidth] = measure_bandwidth) -> list[str]:
    """The run report's measured-against-predicted section: the engine comparison's explanation when the
    notebook holds single-user records, and each real curve against the speed limit and the predicted
    ceiling when it holds levels; each part absent, with its reason, when its inputs are. ``measure``
    times this machine's bandwidth for a rehearsal."""
    if not notebook.is_file():
        return []
    speed = read_records(notebook, "engine-speed", select=is_engine_speed).records
    levels: dict[str, dict[int, dict]] = {}
    for rec in read_records(notebook, "level", select=is_level).records:
        levels.setdefault(rec[LEVEL.label], {})[rec[STATS.concurrency]] = rec
    if not speed and not levels:
        return []
    lines = ["## Measured against what bandwidth allows", ""]
    rehearsal = getattr(plan, "rehearsal", None)
    if rehearsal is not None and (predicted_for := plan_model(plan)) in rehearsal.models:
        return lines + [rehearsal_absent(predicted_for, plan_machine(plan)), ""]
    try:
        key = plan_machine(plan)
        machine = lookup(key) if key else None
    except HarnessError as exc:
        return lines + [f"Not computed: {exc}", ""]
    bandwidth = float(machine["bandwidth_gb_s"]) if machine else None
    machine_label = machine["name"] if machine else ""
    if rehearsal is not None:
        bandwidth, machine_label, opening = rehearsal_bandwidth(machine, measure())
        lines += opening
    try:
        model, why = load_model(os.path.expandvars(plan_model(plan))), ""
    except HarnessError as exc:
        model, why = None, f"no model to predict with: {exc}"
    if levels:
        lines += _curve_lines(levels, model, bandwidth, plan, why)
    if speed:
        lines += [f"### {TITLE} (engine comparison)", ""]
        if model is None:
            return lines + [f"Not computed: {why}", ""]
        feats = read_records(notebook, "features", select=is_features).records
        order, by_speed, by_feat = latest_per_engine(speed, feats)
        inputs = Inputs(
            model,
            bandwidth,
            machine_label,
            visible_memory_rules(),
            feature_settings(),
            mapped_mib(notebook),
        )
        lines += [render(order, by_speed, by_feat, inputs), ""]
    return lines


def _curve_lines(levels: dict, model, bandwidth: float | None, plan, why: str) -> list[str]:
    if bandwidth is None:
        return ["No speed limit or ceiling for the curves: the plan names no machine (bandwidth).", ""]
    model_gb = (getattr(plan, "variables", {}) or {}).get("MODEL_GB")
    alone = limits.speed_alone_lines(levels, bandwidth, float(model_gb) if model_gb else None, model)
    peaks = limits.peak_lines(levels, model, bandwidth) if model is not None else [f"- {why}"]
    return [
        "Speed alone as a share of the speed limit (a sane measurement lands at 60-85 %)",
        "",
        *(alone or ["- no real curve has a crowd of 1"]),
        "",
        "Peak output against the aggregate decode ceiling at the same batch and context",
        "",
        *(peaks or ["- no real curve was measured"]),
        "",
    ]
