"""The admission recommendation is the one record the track runner writes itself, not a step's
child process: in a rehearsal it must say so like every other record (scripts/check_rehearsal.py
failed on Track S's quick rehearsal when it did not)."""

from __future__ import annotations

import json

from harness.records.notebook import read_records
from harness.run.admission_step import record_admission
from harness.run.plans import Step
from harness.run.rehearsal import REHEARSAL_ENV

STEP = Step(
    id="llama/admission:llama-admission",
    kind="admission",
    options={"from": "llama-baseline", "label": "llama-admission"},
)


def admission_lines(notebook):
    return read_records(notebook, "admission", select=lambda o: o.get("record") == "admission").records


def test_a_rehearsals_admission_record_says_rehearsal_and_its_stand_in(tmp_path, monkeypatch):
    monkeypatch.delenv(REHEARSAL_ENV, raising=False)  # the runner's own process has none
    notebook = tmp_path / "labbook.md"
    env = {REHEARSAL_ENV: json.dumps({"track": "track-s", "stand_in": "the CPU llama-server"})}
    record_admission(notebook, STEP, None, "no level met the objective", env)
    (rec,) = admission_lines(notebook)
    assert (rec["rehearsal"], rec["rehearsal_track"], rec["stand_in"]) == (
        True,
        "track-s",
        "the CPU llama-server",
    )


def test_a_real_runs_admission_record_is_not_stamped(tmp_path, monkeypatch):
    monkeypatch.delenv(REHEARSAL_ENV, raising=False)
    notebook = tmp_path / "labbook.md"
    record_admission(notebook, STEP, None, "no level met the objective", {})
    (rec,) = admission_lines(notebook)
    assert "rehearsal" not in rec and rec["verdict"] == "none"
