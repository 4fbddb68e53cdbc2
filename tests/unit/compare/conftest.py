"""Runs for the comparison's tests: the practice fixture notebook's baseline (tests/fixtures/notebooks/
practice-run.md, a real practice sweep), copied with one field changed or repeated."""

from __future__ import annotations

import copy

import pytest

from harness.compare.sets import Run
from harness.records.base import is_level
from harness.records.notebook import read_records
from tests.conftest import FIXTURES


@pytest.fixture(scope="session")
def baseline() -> list[dict]:
    found = read_records(FIXTURES / "notebooks" / "practice-run.md", "level", select=is_level).records
    return [r for r in found if r["label"] == "practice-baseline"]


def variant(records: list[dict], name: str, scale: float = 1.0, repeats: int = 1, **changed) -> Run:
    """``records`` as run ``name``: ``changed`` fields set, throughput times ``scale``, and each level
    run ``repeats`` times (each repeat 1 % apart, so the runs have a spread)."""
    out = []
    for rec in records:
        for i in range(repeats):
            new = copy.deepcopy(rec)
            new.update(changed, label=name, run_id=f"{name}-run", repeat=i + 1, repeats=repeats)
            new["output_tokens_per_s"] = round(rec["output_tokens_per_s"] * scale * (1 + 0.01 * i), 3)
            out.append(new)
    return Run(name, "test", tuple(out))
