import json

import pytest

from harness.errors import SchemaError
from harness.records.notebook import append_record, problems, read_records, validate

GOOD = {"schema_version": 1, "machines": {"box": {"name": "Box", "bandwidth_gb_s": 100}}}


def test_valid_record_passes_and_invalid_names_the_field():
    validate(GOOD, "machines")
    bad = {"schema_version": 1, "machines": {"box": {"name": "Box", "bandwidth_gb_s": -1}}}
    with pytest.raises(SchemaError, match=r"machines.box.bandwidth_gb_s"):
        validate(bad, "machines", where="table.yaml")
    assert problems(bad, "machines")


def test_invalid_record_is_never_written(tmp_path):
    book = tmp_path / "labbook.md"
    book.write_text("# My notebook\n")
    with pytest.raises(SchemaError):
        append_record(book, {"schema_version": 2, "machines": {}}, "machines")
    assert book.read_text() == "# My notebook\n"


def test_read_skips_prose_and_warns_with_the_line_number(tmp_path):
    book = tmp_path / "labbook.md"
    book.write_text("# Notes\nsome prose\n")
    append_record(book, GOOD, "machines")
    with open(book, "a") as fh:
        fh.write('{"schema_version": 1, "machines": \n')  # a corrupt line (cut mid-write)
        fh.write(json.dumps({"other_lab": True}) + "\n")  # someone else's line: skipped quietly
        fh.write(
            json.dumps({"schema_version": 1, "machines": {"x": {"name": 3, "bandwidth_gb_s": 1}}}) + "\n"
        )
    result = read_records(book, "machines", select=lambda o: "machines" in o)
    assert result.records == [GOOD]
    assert len(result.warnings) == 2
    assert result.warnings[0].startswith(f"{book}:4: not valid JSON")
    assert f"{book}:6:" in result.warnings[1] and "machines.x.name" in result.warnings[1]


def test_missing_notebook_is_a_clear_error(tmp_path):
    with pytest.raises(SchemaError, match="not found"):
        read_records(tmp_path / "none.md", "machines")


def test_unknown_schema_is_a_clear_error():
    with pytest.raises(SchemaError, match="no schema named"):
        validate({}, "no-such-kind")
