"""The engine comparison's energy on a fixture: two engines' speed records, one with
the practice server's IMITATION energy and a cost, one read without telemetry; the section in
``harness engines`` and the run report, its rows and its words; a speed record with energy is valid
for its schema, whose energy and cost parts are the level record's."""

from __future__ import annotations

import json

from harness.cli import main
from harness.records.notebook import append_record, problems
from harness.paths import PACKAGE
from harness.energy import engine_tables as engine_energy
from harness.report.engine_tables import latest_per_engine, render
from harness.report.markdown import table
from tests.unit.report.test_engine_tables import speed

IMITATION = {
    "telemetry": "practice",
    "interval_s": 0.5,
    "source": "practice",
    "devices": ["imitation of kit"],
    "label": "imitation",
    "method": "power-integrated",
    "energy_j": 120.0,
    "seconds": 2.4,
    "mean_power_w": 50.0,
    "idle_power_w": 35.0,
    "subtracted_idle": False,
    "j_per_output_token": 0.46875,
    "j_per_request": 40.0,
    "output_tokens_per_j": 2.1333,
    "sources": [{"source": "practice", "device": "imitation of kit", "label": "imitation"}],
}
OFF = {
    "telemetry": "none",
    "source": None,
    "devices": [],
    "method": None,
    "energy_j": None,
    "seconds": None,
    "mean_power_w": None,
    "idle_power_w": None,
    "subtracted_idle": False,
    "j_per_output_token": None,
    "j_per_request": None,
    "output_tokens_per_j": None,
    "reason": "telemetry: off (--telemetry none)",
    "absent": {"none": "telemetry: off (--telemetry none)"},
    "sources": [],
}
COST = {"basis": "per-kwh", "price": 0.3, "per_million_output_tokens": 0.0390625}


def fixture() -> list[dict]:
    return [
        speed("practice", "short", energy={**IMITATION, "mean_power_w": 40.0, "j_per_output_token": 0.4}),
        speed("practice", "long", energy=IMITATION, cost=COST),
        speed("other", "short", energy=OFF),
        speed("other", "long", energy=OFF),
    ]


def test_a_speed_record_with_energy_is_valid_and_its_parts_are_the_level_records():
    for rec in fixture():
        assert not problems(rec, "engine-speed"), problems(rec, "engine-speed")
    level, engine = (
        json.loads((PACKAGE / "schemas" / f"{name}.schema.json").read_text())["properties"]
        for name in ("level", "engine-speed")
    )
    for part in ("energy", "cost"):
        mine, theirs = dict(engine[part]), dict(level[part])
        mine.pop("description"), theirs.pop("description")
        assert mine == theirs, part  # the same shape, so the same readers serve both


def test_each_engine_has_a_row_and_an_imitation_says_so():
    order, by_speed, _ = latest_per_engine(fixture(), [])
    rows = {row[0]: row for row in engine_energy.energy_rows(order, by_speed)}
    assert rows["practice"][1:9] == [
        "40.0",
        "50.0",
        "35.0",
        "0.4",
        "0.4688",
        "2.133",
        "40",
        "0.03906 (at 0.3 per kWh)",
    ]
    assert rows["practice"][9] == "practice imitation of kit (IMITATION)"
    assert rows["other"][1:] == ["-"] * 8 + ["none"]
    lines = engine_energy.section(order, by_speed, table)
    assert lines[0] == "Energy (single user, over each test's repetitions):"
    assert lines[2].startswith("IMITATION: these figures are not a measurement of a real device")


def test_no_energy_anywhere_is_one_line_with_the_records_reason():
    records = [speed("other", "short", energy=OFF), speed("other", "long")]
    order, by_speed, _ = latest_per_engine(records, [])
    assert engine_energy.section(order, by_speed, table) == [
        "Energy (single user, over each test's repetitions): none (telemetry: off (--telemetry none)).",
        "",
    ]
    order, by_speed, _ = latest_per_engine([speed("old", "short"), speed("old", "long")], [])
    [line, _] = engine_energy.section(order, by_speed, table)
    assert "read no telemetry" in line


def test_harness_engines_prints_the_energy_table(tmp_path, capsys):
    book = tmp_path / "labbook.md"
    for rec in fixture():
        append_record(book, rec, "engine-speed")
    order, by_speed, _ = latest_per_engine(fixture(), [])
    text = render(order, by_speed, {})
    energy = text[text.index("Energy (single user") :]
    row = next(line for line in energy.splitlines() if line.startswith("| practice"))
    assert [c.strip() for c in row.strip("|").split("|")][:4] == ["practice", "40.0", "50.0", "35.0"]
    main(["engines", "--labbook", str(book)])
    out = capsys.readouterr().out
    assert "Energy (single user, over each test's repetitions):" in out and "IMITATION" in out
