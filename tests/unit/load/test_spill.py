"""A spooled level (``harness.load.spill``) writes the record and the samples lines that its
samples kept in memory write: checked on a recorded level (tests/fixtures/levels/, see
tests/unit/measure/test_tally.py), with columns spilled to disk every few values."""

from __future__ import annotations

import os

import pytest

from harness.load import spill
from harness.load.spill import LevelSpool, SpillColumn
from harness.measure.levels import sample_record
from harness.records.notebook import append_level
from harness.workloads.level_part import tally_workload_stats
from tests.unit.measure.test_tally import record, recorded


def test_a_spilled_column_keeps_every_value_in_order_and_leaves_no_file(monkeypatch, tmp_path):
    monkeypatch.setattr(spill, "BUFFER", 4)
    column = SpillColumn(tmp_path)
    values = [i * 0.1 for i in range(11)]
    column.append(values[0])
    column.extend(values[1:6])
    for v in values[6:]:
        column.append(v)
    assert len(column) == 11 and list(column.values()) == values
    assert list(column.values()) == values  # read again, the same
    assert os.listdir(tmp_path) == []  # unnamed files: nothing left behind, even by a kill
    column.close()


@pytest.mark.parametrize("name", ["level", "cut", "lengths"])
def test_a_spooled_level_writes_what_its_kept_samples_write(monkeypatch, tmp_path, name):
    monkeypatch.setattr(spill, "BUFFER", 16)  # every column spilled many times over
    head, samples = recorded(name)
    mark = {"run_id": "r1", "repeat": 1}
    spool = LevelSpool("recorded", head["concurrency"], mark, tmp_path / "run")
    for s in samples:
        spool.add(s)
    assert spool.lines == len(samples) and spool.tally.samples is None
    got = record(spool.tally, head, 0.95, tally_workload_stats(spool.tally, "prompts", {}, False))
    assert got == head["expected"]["0.95"]
    # the samples file: the same bytes as the rows written from the samples in memory
    rows = [{**sample_record(s, "recorded", head["concurrency"]), **mark} for s in samples]
    append_level(tmp_path / "kept.md", got, tmp_path / "kept.samples.jsonl", rows)
    append_level(tmp_path / "spooled.md", got, tmp_path / "spooled.samples.jsonl", spool.pieces())
    spool.close()
    kept, spooled = (tmp_path / f"{k}.samples.jsonl" for k in ("kept", "spooled"))
    assert spooled.read_bytes() == kept.read_bytes()
    assert len(spooled.read_bytes().splitlines()) == len(samples)
    assert (tmp_path / "spooled.md").read_text() == (tmp_path / "kept.md").read_text()
    assert os.listdir(tmp_path / "run") == []


def test_a_spool_copied_in_pieces_is_whole(monkeypatch, tmp_path):
    """Pieces smaller than a line still join into whole lines, after a last line cut by a crash
    (the torn record is cut off first: its writer never returned)."""
    monkeypatch.setattr(spill, "PIECE", 7)
    _, samples = recorded("cut")
    spool = LevelSpool("recorded", 12, {"run_id": "r1", "repeat": 1}, tmp_path)
    for s in samples[:5]:
        spool.add(s)
    target = tmp_path / "lab.samples.jsonl"
    target.write_text('{"torn": ')  # a line a kill cut short
    head = recorded("cut")[0]
    append_level(tmp_path / "lab.md", head["expected"]["0.1"], target, spool.pieces())
    spool.close()
    lines = target.read_text().splitlines()
    assert '{"torn": ' not in lines and len(lines) == 5
