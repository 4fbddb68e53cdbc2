"""The energy tables, chart and report section from level records: a real device's
figures as they are, an imitation's marked IMITATION in the table, the chart and the section, the
capacity answer gaining "at N W, X J per output token", and a curve recorded without telemetry as
one line saying why."""

from __future__ import annotations

from types import SimpleNamespace

from harness.report import curve_tables, energy_report, energy_tables as et, run_report
from harness.report.energy_charts import energy_chart
from tests.conftest import FIXTURES
from tests.unit.report.test_charts import png_size

NOTEBOOK = FIXTURES / "notebooks" / "practice-run.md"


def _with_energy(levels: dict[int, dict], label: str | None = "imitation") -> dict[int, dict]:
    out = {}
    for c, rec in levels.items():
        tokens = rec["output_tokens"] or 1
        e = {
            "telemetry": "practice", "source": "practice", "devices": ["imitation of kit"],
            "method": "power-integrated", "energy_j": 10.0 * c * tokens / 100, "seconds": 5.0,
            "mean_power_w": 35.0 + 15 * min(c, 8), "idle_power_w": 35.0, "subtracted_idle": False,
            "j_per_output_token": 0.1 * c, "j_per_request": 1.0, "output_tokens_per_j": 10 / c, "sources": [],
        }  # fmt: skip
        if label:
            e["label"] = label
        cost = {"basis": "per-kwh", "price": 0.3, "per_million_output_tokens": 0.0083 * c}
        out[c] = {**rec, "energy": e, "cost": cost}
    return out


def test_rows_say_power_energy_per_token_cost_and_the_imitation():
    levels = _with_energy(run_report.levels_in(NOTEBOOK)["practice-baseline"])
    rows = et.energy_rows(levels)
    first = dict(zip(et.ENERGY_HEAD, rows[0], strict=True))
    assert first["mean W"] == "50.0" and first["idle W"] == "35.0" and first["J per output token"] == "0.1"
    assert first["cost per M output tokens"] == "0.0083 (at 0.3 per kWh)"
    assert first["source"] == "practice imitation of kit (IMITATION)"
    assert et.labels(levels) == ["imitation"] and et.measured(levels)


def test_the_capacity_answer_gains_its_watts_and_joules_per_token():
    plain = run_report.levels_in(NOTEBOOK)["practice-baseline"]
    levels = _with_energy(plain, label=None)
    line = curve_tables.capacity_line(levels, 2.0)
    assert line.startswith(curve_tables.capacity_line(plain, 2.0) + "; ")
    capacity = int(line.split("; ")[-1].split()[0])
    assert line.endswith(
        f"{capacity} at once at {35 + 15 * min(capacity, 8)} W, {0.1 * capacity:.3g} J per output token"
    )
    assert "IMITATION" in curve_tables.capacity_line(_with_energy(plain), 2.0)


def test_the_section_draws_the_chart_and_marks_the_imitation(tmp_path):
    levels = _with_energy(run_report.levels_in(NOTEBOOK)["practice-baseline"])
    r = SimpleNamespace(
        run_dir=tmp_path, levels={"practice-baseline": levels}, curve_labels=["practice-baseline"]
    )
    text = "\n".join(energy_report.section(r))
    assert text.startswith("## Energy and cost\n\n**IMITATION**: these watts and joules are made up")
    assert (
        "![output tokens/s against watts, J per output token against crowd size](charts/energy.png)" in text
    )
    assert png_size(tmp_path / "charts" / "energy.png") == (11 * 110, int(4.5 * 110))
    assert "| c   | out tok/s   | mean W   |" in text and "(IMITATION)" in text
    assert "- at the operating point (c=" in text


def test_a_curve_without_telemetry_is_one_line_saying_why(tmp_path):
    levels = run_report.levels_in(NOTEBOOK)
    r = SimpleNamespace(run_dir=tmp_path, levels=levels, curve_labels=["practice-baseline"])
    text = "\n".join(energy_report.section(r))
    assert "No energy figure" in text and "read no telemetry" in text and "charts" not in text


def test_the_chart_of_a_real_device_carries_no_imitation_mark(tmp_path):
    levels = _with_energy(run_report.levels_in(NOTEBOOK)["practice-baseline"], label=None)
    real = energy_chart({"real": levels}, tmp_path / "real.png")
    fake = energy_chart({"real": _with_energy(levels)}, tmp_path / "fake.png")
    assert real.read_bytes() != fake.read_bytes()  # the title and legend differ by the mark alone
