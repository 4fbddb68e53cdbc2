"""A level's tally gives the figures its samples gave, exactly: checked on recorded levels.

Each fixture in tests/fixtures/levels/ is one real level against the practice server (profile
fleet, 12 users, 160 requests; ``cut``: the server killed 1.5 s in; ``lengths``: drawn input and
output lengths), its exact samples (``Sample`` fields, floats as written by ``json``), and the
level record the code before the tally wrote from them, at a client CPU share of 0.1 and 0.95
(the second names the client as the limit, so its note is compared too).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from harness.measure import stats
from harness.measure.levels import level_record
from harness.measure.sample import Sample
from harness.measure.tally import LevelTally
from harness.records.level import LevelContext
from harness.workloads.level_part import tally_workload_stats, workload_stats

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "levels"
CONTEXT = LevelContext("recorded", "practice", "local-chat", "http://127.0.0.1:8099/v1", "mixed", 24, 0.0)
STAMP = "2026-12-06T11:15:00Z"


def recorded(name: str) -> tuple[dict, list[Sample]]:
    with gzip.open(FIXTURES / f"{name}.jsonl.gz", "rt") as f:
        lines = f.read().splitlines()
    return json.loads(lines[0]), [Sample(**json.loads(line)) for line in lines[1:]]


def record(samples, head: dict, cpu: float, workload) -> dict:
    return level_record(
        samples, head["concurrency"], head["wall_s"], CONTEXT, STAMP, client_cpu=cpu, workload=workload
    ).to_dict()


@pytest.mark.parametrize("name", ["level", "cut", "lengths"])
@pytest.mark.parametrize("cpu", ["0.1", "0.95"])
def test_the_tally_writes_the_record_the_samples_wrote(name, cpu):
    head, samples = recorded(name)
    expected = head["expected"][cpu]
    tally = LevelTally.of(samples)  # kept nothing but counts and columns
    assert tally.samples is None
    got = record(tally, head, float(cpu), tally_workload_stats(tally, "prompts", {}, False))
    assert got == expected
    # the list of samples goes through the same tally
    assert record(samples, head, float(cpu), workload_stats(samples, "prompts", {}, False)) == expected


def test_large_columns_sorted_by_numpy_give_the_same_figures(monkeypatch):
    """Past ``stats.BIG`` values a column is sorted by numpy; every figure stays the same."""
    head, samples = recorded("level")
    monkeypatch.setattr(stats, "BIG", 10)
    monkeypatch.setattr("harness.measure.levels.BIG", 10)
    tally = LevelTally.of(samples)
    assert len(tally.col("itl")) > 10
    got = record(tally, head, 0.95, tally_workload_stats(tally, "prompts", {}, False))
    assert got == head["expected"]["0.95"]


def test_a_tally_keeps_its_samples_only_when_asked():
    _, samples = recorded("cut")
    kept = LevelTally.of(samples, keep=True)
    assert kept.samples == samples and len(kept) == 160
    assert (kept.completed, kept.failed) == (36, 124)
    with pytest.raises(ValueError, match="needs its samples kept"):
        tally_workload_stats(LevelTally.of(samples), "conversations", {}, False)
