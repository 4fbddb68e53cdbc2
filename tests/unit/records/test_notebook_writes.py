"""Records are written whole or not at all; samples and record together."""

import errno
import json
import os
from pathlib import Path

import pytest

from harness.errors import ConfigError, SchemaError
from harness.records import notebook
from harness.records.notebook import append_level, append_record, check_writable, read_records

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "notebooks" / "practice-run.md"
LEVEL = next(json.loads(x) for x in FIXTURE.read_text().splitlines() if x.startswith('{"lab"'))


def test_a_failed_write_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    book = tmp_path / "b.md"
    book.write_text("# notes\n")
    real = os.write

    def half_then_full(fd, data):  # the first write lands half, the second finds the disk full
        if len(data) > 20:
            return real(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(notebook.os, "write", half_then_full)
    with pytest.raises(SchemaError, match="No space left on device"):
        append_record(book, LEVEL, "level")
    monkeypatch.setattr(notebook.os, "write", real)
    assert book.read_text() == "# notes\n"


def test_samples_are_taken_back_when_the_record_cannot_be_written(tmp_path, monkeypatch):
    book, samples = tmp_path / "b.md", tmp_path / "b.samples.jsonl"
    samples.write_text('{"old": 1}\n')
    real = notebook.append_lines

    def fail_on_book(path, lines):
        if Path(path) == book:
            raise SchemaError("cannot write b.md (No space left on device); the file is as it was")
        return real(path, lines)

    monkeypatch.setattr(notebook, "append_lines", fail_on_book)
    with pytest.raises(SchemaError):
        append_level(book, LEVEL, samples, [{"ok": True}])
    assert samples.read_text() == '{"old": 1}\n'


def test_nan_is_never_written(tmp_path):
    with pytest.raises(SchemaError, match="nan at wall_s"):
        append_record(tmp_path / "b.md", {**LEVEL, "wall_s": float("nan")}, "level")
    assert not (tmp_path / "b.md").exists() or (tmp_path / "b.md").read_text() == ""


def test_every_damaged_line_is_warned_with_file_and_line(tmp_path):
    book = tmp_path / "b.md"
    text = json.dumps(LEVEL)
    book.write_text("# prose stays silent\n" + text[30:] + "\n" + text[:-30] + text + "\n")
    got = read_records(book, "level")
    assert len(got.records) == 1  # the record appended onto a cut line is recovered
    assert [w.split(": ")[0] for w in got.warnings] == [f"{book}:2", f"{book}:3"]


def test_writability_is_checked_first(tmp_path):
    with pytest.raises(ConfigError, match="cannot be written"):
        check_writable(tmp_path)
    check_writable(tmp_path / "new" / "b.md")
    assert not (tmp_path / "new" / "b.md").exists()
