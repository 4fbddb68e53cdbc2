"""The energy chart, drawn from level records only: total output tokens/s against mean
power (W), one point per level labelled with its crowd, and J per output token against the crowd.
A curve whose figures are an imitation (the practice server's) says IMITATION in its legend and
across the chart's title, so the picture is never taken for a measurement."""

from __future__ import annotations

from pathlib import Path

from harness.report.charts import _save, conditions, plt
from harness.report.energy_tables import labels

IMITATION_MARK = "IMITATION: the practice server's made-up power figure, not a measurement"


def _points(levels: dict[int, dict], key: str) -> list[tuple[int, float, float]]:
    """(crowd, output tokens/s, the energy figure ``key``) of each level that has both."""
    out = []
    for c in sorted(levels):
        rec, e = levels[c], levels[c].get("energy") or {}
        if e.get(key) is not None and rec.get("output_tokens_per_s") is not None:
            out.append((c, rec["output_tokens_per_s"], e[key]))
    return out


def energy_chart(levels_by_label: dict[str, dict[int, dict]], path: str | Path) -> Path:
    """Left: output tokens/s against mean W; right: J per output token against people at once."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    made_up = False
    for label, levels in levels_by_label.items():
        marks = labels(levels)
        made_up = made_up or bool(marks)
        name = f"{label} ({', '.join(m.upper() for m in marks)})" if marks else label
        power = _points(levels, "mean_power_w")
        if power:
            left.plot([w for _, _, w in power], [t for _, t, _ in power], marker="o", label=name)
            for c, t, w in power:
                left.annotate(f"c={c}", (w, t), textcoords="offset points", xytext=(4, 4), fontsize=7)
        per_token = _points(levels, "j_per_output_token")
        if per_token:
            right.plot([c for c, _, _ in per_token], [j for _, _, j in per_token], marker="o", label=name)
    left.set_xlabel("mean power during the level (W)")
    left.set_ylabel("total output (tokens/s)")
    left.set_title("Throughput against power: each point a crowd size", fontsize=10)
    right.set_xlabel("people at once (concurrency)")
    right.set_ylabel("energy per output token (J)")
    right.set_title("Energy per output token against crowd size", fontsize=10)
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    title = conditions(levels_by_label, None)
    fig.suptitle(
        f"{IMITATION_MARK}\n{title}" if made_up else title, fontsize=9, color="darkred" if made_up else None
    )
    return _save(fig, path)
