"""The GPU check's energy (scripts/gpu-check.sh): from a run directory's notebook, what
the telemetry read during the NVIDIA track's control block: each measure test (short, long: over its
repetitions) and each sweep level, its mean power, joules with their method and source, J per
output token, J per request and output tokens per J, in the words ``harness sweep`` prints
(``energy.record_part.energy_lines``). A figure from the tests' stand-in NVML library says
STAND-IN, the practice server's IMITATION; a record read without telemetry says why. The run's
own report.md has the same figures in its tables (its "Energy and cost" section for the sweep, the
single-user section's energy table for the measure tests); this is the check's short answer.

    python scripts/gpu_energy.py RUN_DIR    # the lines; exit 1 when no record there has an energy part
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.energy.record_part import energy_lines, energy_words
from harness.records.base import is_engine_speed, is_level
from harness.records.notebook import read_records


def lines_of(records: list[dict]) -> list[str]:
    """A line per figure (power and J per output token) first, then one block per measure test and
    per sweep level, the speed tests first."""
    out: list[str] = []
    heads: list[str] = []
    for rec in records:
        if "energy" not in rec and "cost" not in rec:
            continue
        if rec.get("test") in ("short", "long"):
            what = f"measure {rec['test']} ({rec.get('engine')}, {rec.get('repetitions')} repetitions)"
        elif "concurrency" in rec:
            what = f"sweep {rec.get('label')} c={rec['concurrency']}"
        else:
            continue
        e = rec.get("energy") or {}
        said = energy_lines(rec) or [f"         energy: none ({e.get('reason') or 'no telemetry read'})"]
        out += [what, *said]
        words = energy_words(e)
        if words:
            heads.append(f"- {what}: {words}")
    return heads + ([""] if heads else []) + out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir", type=Path)
    args = p.parse_args(argv)
    book = args.run_dir / "labbook.md"
    if not book.is_file():
        print(f"gpu-energy: no notebook at {book}", file=sys.stderr)
        return 1
    records = _records(book)
    found = lines_of(records)
    if not found:
        print(f"gpu-energy: no measure or sweep record in {book} carries an energy part")
        return 1
    print("\n".join(found))
    return 0


def _records(book: Path) -> list[dict]:
    """The engine-speed records, then the level records, each validated as it is read."""
    speeds = read_records(book, "engine-speed", select=is_engine_speed).records
    levels = read_records(book, "level", select=is_level).records
    return speeds + levels


if __name__ == "__main__":
    sys.exit(main())
