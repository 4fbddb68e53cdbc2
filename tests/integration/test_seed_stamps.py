"""The labs' own checkers, cut from the seed pages, read today's one stamp format as they read the
older ones: each fixture notebook, as kept and with every stamp rewritten to ISO 8601 in UTC with a
Z, gets the same verdicts from them. Skipped, saying so, where the seeds are absent."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from harness.records.base import read_stamp, stamp
from tests.conftest import FIXTURES, ROOT
from tests.seeds import SEEDS, seeds_summarise_engines, seeds_summarise_load

STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:Z|[+-]\d\d:?\d\d)")


def restamped(text: str) -> str:
    """``text`` with every stamp in it written in today's format."""
    return STAMP.sub(lambda m: stamp(read_stamp(m[0])), text)


@pytest.mark.parametrize(
    "cut, book, args",
    [
        (seeds_summarise_load, "practice-run.md", ["--check"]),
        (seeds_summarise_load, "practice-run.md", ["--list"]),
        (seeds_summarise_engines, "engines-spark.md", ["--check"]),
    ],
)
def test_the_seed_checkers_read_todays_stamps_as_they_read_the_older_ones(tmp_path, cut, book, args):
    seed = cut(SEEDS)
    if seed is None:
        pytest.skip(f"no seed page embedding the checker under {SEEDS}")
    script = tmp_path / "checker.py"
    script.write_text(seed)
    kept = (FIXTURES / "notebooks" / book).read_text(encoding="utf-8")
    new = restamped(kept)
    assert STAMP.search(new) and "+0000" not in new  # the engines lab's stamps had this format already
    runs = []
    for name, text in (("kept", kept), ("new", new)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "labbook.md").write_text(text, encoding="utf-8")
        argv = [sys.executable, str(script), "--labbook", str(tmp_path / name / "labbook.md"), *args]
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
        runs.append((done.returncode, done.stdout.replace(f"{tmp_path / name}", "BOOK"), done.stderr))
    (code, out, err), (new_code, new_out, new_err) = runs
    assert new_code == code, new_out[-2000:] + new_err[-1000:]
    assert new_out == restamped(out)
