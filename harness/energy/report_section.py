"""The run report's energy section and its chart, from level records only: for the summarised
curves whose levels carry energy or a cost, the chart (output tokens/s against mean watts, J per
output token against the crowd), a table per curve and the operating point's figures; for the
others, one line saying why there are none. An imitation's figures (the practice server's) are
marked IMITATION in the section's first line, the table, the chart's legend and across its title,
so the picture is never taken for a measurement.

Pure: this module says what the section and the chart hold; the report renders them (its Markdown
``table`` and ``absent``, its matplotlib drawing of ``Chart``), so energy never imports report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

from harness.energy import tables as et
from harness.energy.record_part import ENERGY
from harness.records.level import LEVEL, LevelStats

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

IMITATION_MARK = "IMITATION: the practice server's made-up power figure, not a measurement"
ALT = "output tokens/s against watts, J per output token against crowd size"


class Markdown(Protocol):
    """What the section needs of the report's Markdown (harness.report.markdown has both)."""

    def table(self, headers: list[str], rows: list[list]) -> str: ...

    def absent(self, what: str, why: str) -> list[str]: ...


@dataclass(frozen=True)
class Series:
    """One curve in one panel: its legend name, its points and the note beside each point."""

    name: str
    x: list[float]
    y: list[float]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Panel:
    title: str
    x_label: str
    y_label: str
    series: list[Series]


@dataclass(frozen=True)
class Chart:
    """The energy chart: two panels side by side and the mark above the conditions (``""`` for a
    real device's figures)."""

    panels: tuple[Panel, Panel]
    mark: str


def _points(levels: dict[int, dict], key: str) -> list[tuple[int, float, float]]:
    """(crowd, output tokens/s, the energy figure ``key``) of each level that has both."""
    out = []
    for c in sorted(levels):
        rec, e = levels[c], levels[c].get(LEVEL.energy) or {}
        tok_s = LevelStats.read(rec).output_tokens_per_s
        if e.get(key) is not None and tok_s is not None:
            out.append((c, tok_s, e[key]))
    return out


def chart(levels_by_label: dict[str, dict[int, dict]]) -> Chart:
    """Left: output tokens/s against mean W, each point labelled with its crowd; right: J per output
    token against people at once. A curve with imitation figures says so in its legend name."""
    power, per_token, made_up = [], [], False
    for label, levels in levels_by_label.items():
        marks = et.labels(levels)
        made_up = made_up or bool(marks)
        name = f"{label} ({', '.join(m.upper() for m in marks)})" if marks else label
        watts = _points(levels, ENERGY.mean_power_w)
        if watts:
            notes = [f"c={c}" for c, _, _ in watts]
            power.append(Series(name, [w for _, _, w in watts], [t for _, t, _ in watts], notes))
        joules = _points(levels, ENERGY.j_per_output_token)
        if joules:
            per_token.append(Series(name, [c for c, _, _ in joules], [j for _, _, j in joules]))
    left = Panel(
        "Throughput against power: each point a crowd size",
        "mean power during the level (W)",
        "total output (tokens/s)",
        power,
    )
    right = Panel(
        "Energy per output token against crowd size",
        "people at once (concurrency)",
        "energy per output token (J)",
        per_token,
    )
    return Chart((left, right), IMITATION_MARK if made_up else "")


def section(shown: dict[str, dict[int, dict]], draw: Callable[[dict], str], md: Markdown) -> list[str]:
    """The section's Markdown lines for the curves ``shown`` (label -> levels); ``draw(measured)``
    draws the chart (``chart``) of the measured curves where a level has energy and returns the
    image's path."""
    lines = ["## Energy and cost", ""]
    measured = {label: lv for label, lv in shown.items() if et.measured(lv)}
    if not measured:
        first = next(iter(shown.values()), None)
        return lines + md.absent(
            "No energy figure", et.why_none(first) if first else "no curve was summarised"
        )
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
    if any(
        et.measured({c: rec for c, rec in lv.items() if rec.get(LEVEL.energy)}) for lv in measured.values()
    ):
        lines += [f"![{ALT}]({draw(measured)})", ""]
    for label, levels in measured.items():
        lines += [f"### {label}", "", md.table(et.ENERGY_HEAD, et.energy_rows(levels)), ""]
        point = et.operating_energy_line(levels)
        if point:
            lines += [f"- {point}", ""]
    for label in shown.keys() - measured.keys():
        lines += md.absent(f"No energy figure for {label}", et.why_none(shown[label]))
    return lines
