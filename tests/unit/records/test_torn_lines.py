"""A write cut short by a SIGKILL leaves a torn last line: readers skip it and name it, the next
append cuts it off, and every line of the samples file passes its schema. The samples and records
are a real sweep's (tests/fixtures/notebooks/practice-sweep.md: its first line says how it was made)."""

from __future__ import annotations

import json
import multiprocessing
import shutil
from pathlib import Path

from harness.records.base import is_level
from harness.records.notebook import append_lines, append_record, read_records, read_samples

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "notebooks"
BOOK, SAMPLES = FIXTURES / "practice-sweep.md", FIXTURES / "practice-sweep-samples.jsonl"
LEVELS = read_records(BOOK, "level", select=is_level).records


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    book, samples = tmp_path / "labbook.md", tmp_path / "labbook.samples.jsonl"
    shutil.copy(BOOK, book)
    shutil.copy(SAMPLES, samples)
    return book, samples


def test_a_real_sweeps_samples_pass_their_schema_and_match_their_records():
    got = read_samples(SAMPLES, LEVELS)
    assert not got.warnings and len(LEVELS) == 2
    assert len(got.records) == sum(rec["requests"] for rec in LEVELS) == 8


def test_a_torn_last_line_is_named_then_cut_by_the_next_append(tmp_path):
    book, samples = _copy(tmp_path)
    level = json.dumps(LEVELS[0])
    with open(book, "a", encoding="utf-8") as fh:
        fh.write(level[: len(level) // 2])  # a write cut at a page by a SIGKILL
    got = read_records(book, "level", select=is_level)
    assert len(got.records) == 2 and len(got.warnings) == 1
    assert "a torn last line" in got.warnings[0] and got.warnings[0].startswith(f"{book}:7:")
    append_record(book, {**LEVELS[1], "label": "after"}, "level")
    got = read_records(book, "level", select=is_level)
    assert not got.warnings and [r["label"] for r in got.records] == ["run", "run", "after"]
    assert book.read_text(encoding="utf-8").endswith("}\n")


def test_torn_samples_are_named_and_a_level_cut_before_its_record_is_told_apart(tmp_path):
    book, samples = _copy(tmp_path)
    rows = samples.read_text(encoding="utf-8").splitlines()
    gone = {"run_id": "20261206T110400Z-4242", "concurrency": 3}  # a level whose record never landed
    cut = [json.dumps({**json.loads(r), **gone}) for r in rows[:3]]
    samples.write_text("\n".join(rows + cut) + "\n" + cut[0][:100], encoding="utf-8")
    got = read_samples(samples, LEVELS)
    assert len(got.records) == 8
    assert "a torn last line" in got.warnings[0]
    assert "3 sample(s) of run at c=3 (run 20261206T110400Z-4242, repeat 1) have no level" in got.warnings[1]
    append_lines(samples, [rows[0]])
    assert not [w for w in read_samples(samples).warnings if "torn" in w]


def test_an_unended_line_that_is_no_torn_record_gets_its_newline(tmp_path):
    for tail in ("prose typed by hand, no newline", json.dumps(LEVELS[0])):
        book = tmp_path / "b.md"
        book.write_text("# notes\n" + tail, encoding="utf-8")
        append_record(book, LEVELS[1], "level")
        assert book.read_text(encoding="utf-8").splitlines()[1] == tail  # kept whole, never cut


def _append_many(path: str, n: int) -> None:
    line = json.dumps({**LEVELS[0], "label": "x" * 5000})  # past a page: a write the kernel may split
    for _ in range(n):
        append_lines(path, [line])


def test_writers_at_once_never_interleave(tmp_path):
    path = tmp_path / "b.md"
    fork = multiprocessing.get_context("fork")
    procs = [fork.Process(target=_append_many, args=(str(path), 40)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    got = read_records(path, "level")
    assert not got.warnings and len(got.records) == 160
