#!/usr/bin/env python3
"""Where ``make test``'s time goes: each file's summed test time from pytest's JUnit XML, and the
engines' serial unit against the rest (tests/conftest.py's ``work_unit``), so the next minute to
cut is named from a real run rather than guessed. CI prints it after ``make test``.

    .venv/bin/python scripts/test_times.py JUNIT_XML [--top 25]
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import work_unit  # noqa: E402


def file_of(case: ET.Element) -> str:
    """The test file of a JUnit ``testcase`` (its classname is the dotted module, then classes)."""
    parts = case.get("classname", "").split(".")
    for cut in range(len(parts), 0, -1):
        path = "/".join(parts[:cut]) + ".py"
        if (ROOT / path).is_file():
            return path
    return case.get("file") or ".".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("junit", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    files: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for case in ET.parse(args.junit).getroot().iter("testcase"):
        path = file_of(case)
        files[path] += float(case.get("time") or 0)
        counts[path] += 1
    units: Counter[str] = Counter()
    for path, seconds in files.items():
        units["the engines' serial unit" if work_unit(path) == "serial" else "the rest"] += seconds
    rows = [
        [path, counts[path], seconds, "serial" if work_unit(path) == "serial" else ""]
        for path, seconds in files.most_common(args.top)
    ]
    print(tabulate(rows, ["file", "tests", "seconds", "unit"], floatfmt=".1f"))
    print()
    print(tabulate([[k, v] for k, v in units.items()], ["summed test time", "seconds"], floatfmt=".0f"))
    print(f"all: {sum(files.values()):.0f} s over {sum(counts.values())} tests in {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
