"""Property-based tests of the notebook: arbitrary damage never loses an undamaged record and never
raises; appends after a cut line never lose the new record."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.records.notebook import append_record, read_records
from tests.unit.properties import examples

SCHEMA = "level"
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "notebooks" / "practice-run.md"
BASE = next(json.loads(x) for x in FIXTURE.read_text().splitlines() if x.startswith('{"lab"'))


def record(i: int) -> dict:
    return {**BASE, "label": f"run-{i}"}


DAMAGE = st.sampled_from(["cut", "garbage", "join", "prose", "nul", "none"])


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(DAMAGE, st.integers(0, 400), st.binary(max_size=30)), min_size=1, max_size=8))
def test_damage_never_loses_an_undamaged_record(tmp_path, plan):
    lines, intact = [], []
    for i, (damage, at, junk) in enumerate(plan):
        text = json.dumps(record(i))
        if damage == "cut":
            lines.append(text[: at % len(text)])
        elif damage == "garbage":
            lines.append(junk.decode("latin-1").replace("\n", " ") + text[at % len(text) :])
        elif damage == "join" and lines:
            lines[-1] += text  # a cut line with no newline, then a whole record appended onto it
            intact.append(f"run-{i}")
        elif damage == "prose":
            lines.append("Some prose about run " + str(i))
        elif damage == "nul":
            lines.append("\x00" * (at % 5))
        else:
            lines.append(text)
            intact.append(f"run-{i}")
    path = tmp_path / f"book-{abs(hash(tuple(lines)))}.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    got = read_records(path, SCHEMA)
    labels = [r["label"] for r in got.records]
    for label in intact:
        assert label in labels, (label, lines)


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=80).filter(lambda t: "\n" not in t))
def test_an_append_after_a_cut_line_is_never_swallowed(tmp_path, tail):
    path = tmp_path / f"book-{abs(hash(tail))}.md"
    path.write_text("# notes\n" + json.dumps(record(0))[:40] + tail, encoding="utf-8")  # a crash mid-line
    append_record(path, record(1), SCHEMA)
    got = read_records(path, SCHEMA)
    assert [r["label"] for r in got.records][-1] == "run-1"
    assert path.read_text(encoding="utf-8").endswith("\n")
