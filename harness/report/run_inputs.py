"""What every section of the run report reads (``RunInputs``): the run directory, its plan and
manifest, the level records by curve, and the notebook's other records and the samples file
beside it, each read once; and why a kind of step left nothing to show."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.records.notebook import read_records, read_samples
from harness.records.level import LEVEL
from harness.records.manifest import MANIFEST, STEP
from harness.records.sample import SampleLine


@dataclass
class RunInputs:
    """What every section reads: the run directory, its plan and manifest, and the level records."""

    run_dir: Path
    plan: Any
    manifest: dict
    levels: dict[str, dict[int, dict]]
    promise: float
    curve_labels: list[str]
    pairs: dict[str, tuple[str, str]]
    _cache: dict = field(default_factory=dict)

    @property
    def notebook(self) -> Path:
        return self.run_dir / "labbook.md"

    def records(self, kind: str, select: Callable[[dict], bool]) -> list[dict]:
        """Valid records of one schema in the run's notebook (read once per kind)."""
        if kind not in self._cache:
            found = (
                read_records(self.notebook, kind, select=select).records if self.notebook.is_file() else []
            )
            self._cache[kind] = found
        return self._cache[kind]

    def samples(self, label: str) -> list[SampleLine]:
        """The exact per-request rows of one curve's levels from the samples file beside the
        notebook (the rows of the run each level record came from, when the rows say their run)."""
        if "samples" not in self._cache:
            rows = read_sample_rows(self.notebook.with_suffix(".samples.jsonl"))
            self._cache["samples"] = [SampleLine.read(row) for row in rows]
        levels = self.levels.get(label, {})
        return [
            row
            for row in self._cache["samples"]
            if row.label == label
            and row.concurrency in levels
            and (
                not levels[row.concurrency].get(LEVEL.run_id)
                or row.run_id in (None, levels[row.concurrency][LEVEL.run_id])
            )
        ]

    def steps_of(self, kind: str) -> list[dict]:
        return [s for s in self.manifest.get(MANIFEST.steps, []) if s.get(STEP.kind) == kind]

    def why_none(self, kind: str) -> str:
        """Why the steps of one kind left nothing to show: not in the plan, skipped, failed, or silent."""
        steps = self.steps_of(kind)
        if not steps:
            return f"this plan has no {kind} step"
        for status in ("failed", "skipped", "running", "pending"):
            hit = [s for s in steps if s.get(STEP.status) == status]
            if len(hit) == len(steps) or (status == "failed" and hit):
                reason = hit[0].get(STEP.reason)
                return f"the {kind} step {status}" + (f": {reason}" if reason else "")
        return f"the {kind} steps wrote no record to the notebook"


def read_sample_rows(path: Path) -> list[dict]:
    """Every valid row of a samples file (none when it is absent); a torn or invalid line is
    skipped (``read_samples`` names it)."""
    if not path.is_file():
        return []
    return read_samples(path).records
