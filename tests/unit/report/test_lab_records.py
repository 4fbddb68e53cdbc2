"""The run report's admission section reads each admission line as its typed record: the curve
it came from (the line's ``from``), the level, how it was chosen, and what the admission run
measured there."""

from __future__ import annotations

from harness.records.notebook import append_record
from harness.records.sizing import AdmissionRecommendation, AdmissionRun, Confirmed, Objective
from harness.report import lab_records
from harness.report.run_inputs import RunInputs


def admission(level: int | None, confirmed: Confirmed | None, verdict: str) -> dict:
    return AdmissionRecommendation(
        label="llama-admission",
        source="llama-baseline",
        run=AdmissionRun(engine="llama", model="m", server_slots=4),
        method="operating point",
        objective=Objective(text="TTFT p90 <= 2 s", limits={"ttft_s.p90": 2.0}),
        source_levels=[1, 2, 4, 8],
        level=level,
        unacceptable_from=8 if level else None,
        unacceptable_why="TTFT p90 3.1 s > 2 s" if level else None,
        confirmed=confirmed,
        verdict=verdict,
        recommendation="admit 4 at once" if level else "no level qualified",
        why="highest level inside the objective",
        recorded_at="2026-12-06T20:00:00Z",
    ).to_dict()


def section(tmp_path, *records: dict) -> list[str]:
    for rec in records:
        append_record(tmp_path / "labbook.md", rec, "admission")
    inputs = RunInputs(tmp_path, None, {}, {}, 2.0, [], {})
    return lab_records.admission_section(inputs)


def test_a_confirmed_admission_names_its_curve_level_region_and_run(tmp_path):
    seen = Confirmed(4, "mixed", 40, 0, 1.234, 1.5, 0.05, True, None)
    text = "\n".join(section(tmp_path, admission(4, seen, "recommended")))
    row = next(line for line in text.splitlines() if line.startswith("| llama-baseline"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:4] == ["llama-baseline", "c=4", "operating point", "c=8 (TTFT p90 3.1 s > 2 s)"]
    assert cells[4].startswith("mixed: 40 done, 0 failed, TTFT p90 1.23")
    assert cells[5:] == ["recommended", "admit 4 at once"]


def test_an_admission_without_a_level_or_a_run_says_so(tmp_path):
    text = "\n".join(section(tmp_path, admission(None, None, "none")))
    row = next(line for line in text.splitlines() if line.startswith("| llama-baseline"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:4] == ["none", "operating point", "none measured above it"]
    assert cells[4] == "no admission run at this level"
