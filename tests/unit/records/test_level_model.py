"""The level record's typed model and its schema name the same fields with the same types, so a
field added to one and not the other fails here; and the typed reader reads every level line the
fixture notebooks hold, and the lab's own (old) shape."""

from __future__ import annotations

import dataclasses
import json

import pytest

from harness.records import level as lr, base as r
from harness.measure.backlog import Backlog
from harness.measure.curves import merge_runs
from harness.measure.levels import level_stats
from harness.workloads.level_part import TurnRow, WorkloadStats
from harness.records.notebook import load_schema, read_levels, read_records
from tests.conftest import FIXTURES
from tests.unit.records.test_records import _context, _samples

SCHEMA = load_schema(lr.LevelRecord.KIND)
DIST = lr.Distribution(0.1, 0.2, 0.3, 0.4, 0.25)
JSON_TYPES = {"int": "integer", "float": "number", "str": "string", "dict": "object", "None": "null"}


def _full_record() -> dict:
    """A level record with every optional part present: every key the model can write."""
    turn = TurnRow(1, 2, 2, DIST, DIST, 10.0, 0.5)
    workload = WorkloadStats(
        kind="conversations",
        params={"turns": "2"},
        input_tokens_asked=DIST,
        output_tokens_asked=DIST,
        input_tokens_sent=DIST,
        schedule_lateness_s=DIST,
        departure_gap_cv=1.0,
        turns=[turn],
        conversations=2,
        tool_call_turns=1,
        answers_without_text={"empty": 1},
        ended_early=1,
        turns_not_sent=1,
        tool_call_failures=1,
        notes=("cut",),
        schedule_note="late",
        cached_note="over",
        backlog=Backlog(True, True, 5, 1.0, 10, 4, 6, None, 0.1, 0.5),
    )
    stats = dataclasses.replace(
        level_stats(_samples(), 4, 1.0, r.DEFAULT_OBJECTIVES), decode_note="flood", ttft_absent="none"
    )
    record = lr.LevelRecord(
        context=dataclasses.replace(_context(lr.ServerInfo("1", "h", "q4", 4096, 4)), endpoint="completions"),
        stats=stats,
        recorded_at="2026-12-01T00:00:00Z",
        arrival=lr.Arrival("poisson", 2.0, 10.0, 2, 0.5, [{"worker": "w"}], "master"),
        client=lr.ClientCheck(0.5, True, {"kv": 1}, "late"),
        run=lr.RunMark("run-1", 1, 2),
        workload=workload,
        energy={"energy_j": 1.0},
        machine={"machine_schema": 1},
        cost={"usd": 1.0},
        series={"t_s": [0.0, 0.5], "server": {}, "client": {}},
    )
    return record.to_dict()


def test_the_model_writes_every_field_the_schema_declares_and_no_other():
    written = set(_full_record())
    declared = set(SCHEMA["properties"])
    assert written - declared == set(), "fields the model writes that the schema lacks"
    assert declared - written == set(), "fields the schema declares that no part of the model writes"


def _json_types(annotation: str) -> set[str]:
    return {JSON_TYPES[part.strip()] for part in annotation.split("|")}


@pytest.mark.parametrize("field", dataclasses.fields(lr.LevelStats), ids=lambda f: f.name)
def test_each_measured_field_has_the_schemas_type(field):
    prop = SCHEMA["properties"][field.name]
    if field.type == "Distribution":
        assert prop["$ref"] == "#/$defs/dist"
        return
    if "$ref" in prop:  # a shared definition (text or null, a count or null)
        prop = SCHEMA["$defs"][prop["$ref"].rsplit("/", 1)[-1]]
    if "oneOf" in prop or "enum" in prop:  # token_counts (text or counts), arrival_clock (words)
        return
    declared = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    want = _json_types(field.type)
    assert set(declared) - {"null"} <= want | ({"integer"} if "number" in want else set()), field.name


def test_a_distribution_has_the_schemas_percentiles():
    assert {f.name for f in dataclasses.fields(lr.Distribution)} == set(SCHEMA["$defs"]["dist"]["properties"])


def test_field_names_are_the_models_and_a_wrong_one_fails():
    assert lr.STATS.output_tokens_per_s == "output_tokens_per_s" and lr.DIST.p95 == "p95"
    with pytest.raises(AttributeError, match="output_tokens_per_sec"):
        _ = lr.STATS.output_tokens_per_sec


def test_the_typed_reader_gives_back_what_was_written():
    stats = level_stats(_samples(), 4, 1.0, r.DEFAULT_OBJECTIVES)
    written = lr.LevelRecord(
        context=_context(None), stats=stats, recorded_at="2026-12-01T00:00:00Z"
    ).to_dict()
    assert lr.LevelStats.read(written) == stats


def test_an_old_line_reads_with_its_missing_fields_as_none():
    old = {"lab": r.LAB_ID, "label": "a", "concurrency": 2, "requests": 4, "completed": 4, "failed": 0}
    old |= {"wall_s": 2.0, "output_tokens": 40, "output_tokens_per_s": 20.0}
    old |= {"ttft_s": {"p50": 0.1, "p90": 0.2}, "tpot_s": {"p50": 0.01, "p90": 0.02, "p99": 0.03}}
    st = lr.LevelStats.read(old)
    assert st.output_tokens_per_s == 20.0 and st.ttft_s.p90 == 0.2 and st.ttft_s.p95 is None
    assert st.e2e_s == lr.Distribution() and st.goodput_requests_per_s is None


def _fixture_levels() -> list[dict]:
    found = []
    for path in sorted((FIXTURES / "notebooks").glob("*")):
        found += read_records(path, lr.LevelRecord.KIND, select=r.is_level).records
    return found


def test_every_fixture_level_line_reads_typed_and_its_figures_agree():
    levels = _fixture_levels()
    assert levels
    for rec in levels + [merge_runs(levels[:2])]:
        st = lr.LevelStats.read(rec)
        assert st.output_tokens_per_s == rec["output_tokens_per_s"]
        assert st.ttft_s.p90 == rec["ttft_s"]["p90"]
        assert json.dumps(st.tpot_s.to_dict()) == json.dumps({**lr.Distribution().to_dict(), **rec["tpot_s"]})


def test_a_whole_record_reads_typed_and_writes_the_same_line():
    line = _full_record()
    typed = lr.LevelRecord.read(line)
    assert typed.stats.output_tokens_per_s == line["output_tokens_per_s"] and typed.run.repeats == 2
    assert typed.context.server.server_slots == 4 and typed.arrival.kind == "poisson"
    assert json.dumps(typed.to_dict()) == json.dumps(line)


def test_the_notebook_reader_returns_typed_levels_that_give_their_figures_back():
    for path in sorted((FIXTURES / "notebooks").glob("*")):
        lines = read_records(path, lr.LevelRecord.KIND, select=r.is_level).records
        typed, _ = read_levels(path)
        assert [t.stats.output_tokens_per_s for t in typed] == [x["output_tokens_per_s"] for x in lines]
        for t, line in zip(typed, lines, strict=True):
            if "harness_schema" in line:  # the harness's own lines come back as they were
                back = t.to_dict()
                assert {k: back[k] for k in line} == line
                added = {k: v for k, v in back.items() if k not in line}  # fields written since: empty
                assert all(v in (None, lr.Distribution().to_dict()) for v in added.values()), added


def test_the_labs_own_line_reads_with_unknown_names():
    old = {"lab": r.LAB_ID, "label": "a", "concurrency": 2, "requests": 4, "completed": 4, "failed": 0}
    old |= {"wall_s": 2.0, "output_tokens": 40, "output_tokens_per_s": 20.0}
    old |= {"ttft_s": {"p50": 0.1, "p90": 0.2}, "tpot_s": {"p50": 0.01, "p90": 0.02}}
    typed = lr.LevelRecord.read(old)
    assert typed.context.engine == r.UNKNOWN and typed.context.server is None and typed.arrival is None
    assert typed.run is None and typed.client is None and typed.workload is None
    assert typed.stats.concurrency == 2
