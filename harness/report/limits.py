"""Measured curves against what bandwidth allows: the speed one person sees alone as a share of the
speed limit (the lab profile's sane band), and each curve's peak output against the predicted
aggregate decode ceiling at the same batch and context. Pure functions of level records."""

from __future__ import annotations

from harness.sizing import format_compare as ec
from harness.sizing.arithmetic import speed_limit, speed_share
from harness.records.level import LEVEL, LevelStats
from harness.sizing.predictions import aggregate_ceiling, kv_per_token

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


def _real(levels: dict[int, dict]) -> bool:
    return any(rec.get(LEVEL.engine) != "practice" for rec in levels.values())


def _size_gb(levels: dict[int, dict], model) -> float | None:
    """The served format's weight bytes in GB, from the model table entry the curve's quant names."""
    quant = next(iter(levels.values())).get(LEVEL.quant) or ""
    name = ec.format_for_quant(quant, model.formats) if model is not None else None
    return model.formats[name]["tensor_bytes"] / 1e9 if name else None


def speed_alone_lines(
    levels_by_label: dict[str, dict[int, dict]], bandwidth_gb_s: float, model_gb: float | None, model=None
) -> list[str]:
    """One line per real curve with a crowd of 1: 1 / TPOT p50 there, as a share of the speed limit for
    ``model_gb`` (else the weight bytes of the format the curve's quant names)."""
    lines = []
    for label, levels in levels_by_label.items():
        tpot = LevelStats.read(levels.get(1, {})).tpot_s.p50
        if not tpot or not _real(levels):
            continue
        size = model_gb or _size_gb(levels, model)
        if not size:
            lines.append(f"- {label}: no model size (no MODEL_GB, and its quant names no known format)")
            continue
        limit = speed_limit(bandwidth_gb_s, size)
        share, reading = speed_share(1 / tpot, limit)
        lines.append(
            f"- {label}: {1 / tpot:.1f} tok/s alone (1 / TPOT p50 at a crowd of 1) = {share:.0%} of the "
            f"speed limit {bandwidth_gb_s:g} GB/s / {size:.3g} GB = {limit:.1f} tok/s; {reading}"
        )
    return lines


def peak_vs_ceiling(levels: dict[int, dict], model, bandwidth_gb_s: float) -> dict | None:
    """The curve's peak output tokens/s beside the predicted aggregate ceiling for the same batch (the
    crowd, capped at the server's slots) and context (mean prompt plus half the answer limit, the
    mean context a sequence reads while it decodes); None when the quant names no format."""
    if not levels:
        return None
    c, peak = max(levels.items(), key=lambda kv: LevelStats.read(kv[1]).output_tokens_per_s or 0)
    peak_tok_s = LevelStats.read(peak).output_tokens_per_s
    fmt_name = ec.format_for_quant(peak.get(LEVEL.quant) or "", model.formats)
    if fmt_name is None and len(model.formats) == 1:
        fmt_name = next(iter(model.formats))  # a model file holds the one format it was served in
    if fmt_name is None:
        return None
    batch = min(c, peak.get(LEVEL.server_slots) or c)
    context = int((LevelStats.read(peak).prompt_tokens_mean or 0) + (peak.get(LEVEL.max_tokens) or 0) / 2)
    fmt = model.formats[fmt_name]
    total, _ = aggregate_ceiling(bandwidth_gb_s, ec.read_bytes(fmt), kv_per_token(model), batch, context)
    return {
        "c": c,
        "peak_tok_s": peak_tok_s,
        "format": fmt_name,
        "batch": batch,
        "context": context,
        "ceiling_tok_s": total,
        "share": peak_tok_s / total,
    }


def peak_lines(levels_by_label: dict[str, dict[int, dict]], model, bandwidth_gb_s: float) -> list[str]:
    lines = []
    for label, levels in levels_by_label.items():
        if not _real(levels):
            continue
        got = peak_vs_ceiling(levels, model, bandwidth_gb_s)
        if got is None:
            lines.append(f"- {label}: no ceiling: its quant names no format of {model.name}")
            continue
        above = "; above 1: the bandwidth figure or the format is wrong" if got["share"] > 1 else ""
        lines.append(
            f"- {label}: peak {got['peak_tok_s']:.1f} tok/s at c={got['c']} = {got['share']:.2f} of the "
            f"{got['format']} ceiling {got['ceiling_tok_s']:.0f} tok/s (batch {got['batch']}, context "
            f"{got['context']:,} tokens, {bandwidth_gb_s:g} GB/s){above}"
        )
    return lines
