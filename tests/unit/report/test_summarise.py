"""``harness summarise`` below the command line (harness.report.summarise): which summary the
options ask for, its lines handed over in batches, a label not in the notebook refused with the
ones that are, and the curve-summary record written with --record. On the practice run's notebook
(tests/fixtures/notebooks/practice-run.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import build_parser
from harness.errors import ConfigError
from harness.records.notebook import read_records
from harness.report.summarise import summarise

ROOT = Path(__file__).resolve().parents[3]
RUN = ROOT / "tests/fixtures/notebooks/practice-run.md"
LABEL = next(
    json.loads(line)["label"] for line in RUN.read_text().splitlines() if '"output_tokens_per_s"' in line
)


def run(tmp_path, *argv: str) -> tuple[int, list[str], list[str]]:
    book = tmp_path / "book.md"
    if not book.exists():
        shutil.copy(RUN, book)
    args = build_parser().parse_args(["summarise", "--labbook", str(book), *argv])
    out: list[str] = []
    err: list[str] = []
    return summarise(args, out.extend, err.extend), out, err


def test_the_list_names_each_label(tmp_path):
    code, out, _ = run(tmp_path, "--list")
    assert code == 0 and any(LABEL in line for line in out)


def test_a_label_not_in_the_notebook_is_refused_with_those_that_are(tmp_path):
    with pytest.raises(ConfigError, match=LABEL):
        run(tmp_path, "--label", "no-such-label")
    with pytest.raises(ConfigError, match=LABEL):
        run(tmp_path, "--compare", LABEL, "no-such-label")


def test_a_label_with_record_appends_one_curve_summary(tmp_path):
    code, out, _ = run(tmp_path, "--label", LABEL, "--record")
    assert code == 0
    assert out[-1] == f"    appended a curve-summary record for {LABEL} to {tmp_path / 'book.md'}"
    written = read_records(tmp_path / "book.md", "curve-summary").records
    assert [r["label"] for r in written] == [LABEL]


def test_the_lab_checks_give_the_exit_status(tmp_path):
    code, out, _ = run(tmp_path, "--check")
    assert out[0] == "==> the lab's validation rules, applied to the notebook"
    assert code == (1 if any(line.lstrip().startswith("FAIL") for line in out) else 0)
