"""The run report's energy section: for the summarised curves whose levels carry energy
or a cost, the chart (tokens/s against watts, J per output token against the crowd), a table per
curve and the operating point's figures; for the others, one line saying why there are none. An
imitation's figures (the practice server's) are marked IMITATION in the heading's first line, the
table and the chart."""

from __future__ import annotations

from harness.report import energy_tables as et
from harness.report.markdown import absent, table
from harness.report.run_inputs import RunInputs


def section(r: RunInputs) -> list[str]:
    lines = ["## Energy and cost", ""]
    shown = {label: r.levels[label] for label in r.curve_labels if r.levels.get(label)}
    measured = {label: lv for label, lv in shown.items() if et.measured(lv)}
    if not measured:
        first = next(iter(shown.values()), None)
        return lines + absent("No energy figure", et.why_none(first) if first else "no curve was summarised")
    marks = sorted({m for lv in measured.values() for m in et.labels(lv)})
    if marks:
        lines += [
            f"**{' and '.join(m.upper() for m in marks)}**: these watts and joules are made up by the "
            "practice server from its busy seats (`imitation_power` in its profile), read by "
            "`--telemetry practice`; they show the report's energy sections, and measure nothing.",
            "",
        ]
    lines += [
        "Each level's energy is read from its device's own interface during the level (from just before "
        "its first request to just after its last), by the device's counter where it has one, else its "
        "power integrated over the readings; the idle power was read before the first level and is "
        "shown beside, taken off only where the sweep was asked to (`--subtract-idle`).",
        "",
    ]
    if any(et.measured({c: rec for c, rec in lv.items() if rec.get("energy")}) for lv in measured.values()):
        from harness.report.energy_charts import energy_chart

        chart = energy_chart(measured, r.run_dir / "charts" / "energy.png")
        alt = "output tokens/s against watts, J per output token against crowd size"
        lines += [f"![{alt}]({chart.relative_to(r.run_dir)})", ""]
    for label, levels in measured.items():
        lines += [f"### {label}", "", table(et.ENERGY_HEAD, et.energy_rows(levels)), ""]
        point = et.operating_energy_line(levels)
        if point:
            lines += [f"- {point}", ""]
    for label in shown.keys() - measured.keys():
        lines += absent(f"No energy figure for {label}", et.why_none(shown[label]))
    return lines
