"""The one-minute demo's summary, as lines: its curve from the notebook (conditions, the table),
the capacity within the promise, the copies a peak crowd needs, and the crowd chart drawn."""

from __future__ import annotations

from pathlib import Path

from harness.measure import curves
from harness.records.base import is_level
from harness.records.notebook import read_records
from harness.report import curve_tables as tables
from harness.report.charts import crowd_chart
from harness.report.markdown import table


def summary_lines(
    label: str, crowds_text: str, promise: float, peak: int, notebook: Path, log_dir: Path
) -> list[str]:
    """The demo's own curve from the notebook: conditions, the table, capacity and copies, chart."""
    levels = curves.by_label(read_records(notebook, "level", select=is_level).records).get(label, {})
    crowds = {int(c) for c in crowds_text.split(",") if c.strip()}
    levels = {c: r for c, r in levels.items() if c in crowds}  # this run's crowds (latest record of each)
    d = curves.curve(levels)
    if not d.levels:
        return ["\nNo crowd size finished a request; read the practice server's log in " + str(log_dir)]
    what, conditions = tables.conditions_lines(label, levels, d)
    out = [f"\n{what}\n{conditions}\n", table(tables.CURVE_HEAD, tables.curve_rows(d, levels))]
    found = curves.capacity_reading(levels, promise)
    capacity = found.capacity
    out.append(f"\n{tables.capacity_line(levels, promise)}")
    if capacity:
        need, spare = curves.copies_for(peak, capacity)
        bound = "" if found.reading == "exact" else " at most (the capacity is a lower bound)"
        out.append(
            f"a peak of {peak} people needs {need} copies of this server ({spare} with 20 % spares)" + bound
        )
    chart = crowd_chart({label: levels}, log_dir / "crowd.png", promise)
    return out + [
        f"chart: {chart}\nnotebook: {notebook} (harness summarise --labbook {notebook} --label {label})"
    ]
