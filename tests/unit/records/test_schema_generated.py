"""A record kind is declared once: its dataclasses carry each field's schema facts, and its JSON
Schema in harness/schemas/ is written from them (scripts/schemas.py, `make schemas`). This fails
while a checked-in schema differs from what its records give, and checks the rules that turn a
field into a property."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from harness.schema_facts import definitions, fact, object_schema, type_schema
from tests.conftest import ROOT


def _script():
    spec = importlib.util.spec_from_file_location("schemas", ROOT / "scripts" / "schemas.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_generated_schema_is_the_one_checked_in():
    schemas = _script()
    stale = [
        name
        for name, build in schemas.SCHEMAS.items()
        if (ROOT / "harness" / "schemas" / name).read_text(encoding="utf-8") != schemas.text(build())
    ]
    assert not stale, f"stale: {stale}; run `make schemas` and commit them"


def test_the_comparison_names_each_change_of_meaning_and_no_change_of_layout():
    schemas = _script()
    old = schemas.level_schema()
    moved = json.loads(json.dumps(old))
    moved["properties"] = dict(reversed(list(moved["properties"].items())))  # order: no meaning
    moved["required"] = list(reversed(old["required"]))
    assert schemas.compare(old, moved) == []
    moved["properties"]["wall_s"]["minimum"] = 1
    del moved["properties"]["decode_note"]
    assert schemas.compare(old, moved) == [
        "/properties/decode_note: only in the old",
        "/properties/wall_s/minimum: 0 -> 1",
    ]


@dataclass(frozen=True)
class _Span:
    low: float | None = fact(required=True, nullable=True, default=None)
    high: float | None = fact(default=None)

    SCHEMA_DEF: ClassVar[str] = "span"


@dataclass(frozen=True)
class _Inner:
    ttft_s: float = fact(minimum=0)


@dataclass(frozen=True)
class _Part:
    count: int = fact("how many", required=True, minimum=0)
    kind: str = fact(key="arrival", enum=["a", "b"])
    span: _Span = fact()
    spans: list[_Span] = fact()
    inner: _Inner = fact(flatten="slo_")
    note: str | None = fact(written=False, default=None)
    other: Any = fact(declared_in="elsewhere.PART", default=None)

    SCHEMA_REQUIRED: ClassVar[tuple] = ("lab",)
    SCHEMA_KEYS: ClassVar[dict] = {"lab": {"type": "string"}}
    SCHEMA_AFTER: ClassVar[dict] = {"verdict": {"type": "boolean"}}


def test_a_part_becomes_an_object_of_its_fields():
    elsewhere = {"elsewhere.PART": {"type": "object", "description": "there"}}
    got = object_schema(_Part, resolve=elsewhere.__getitem__)
    assert got == {
        "type": "object",
        "required": ["lab", "count"],
        "properties": {
            "lab": {"type": "string"},
            "count": {"type": "integer", "minimum": 0, "description": "how many"},
            "arrival": {"enum": ["a", "b"]},  # renamed; an enum says its own type
            "span": {"$ref": "#/$defs/span"},
            "spans": {"type": "array", "items": {"$ref": "#/$defs/span"}},
            "slo_ttft_s": {"type": "number", "minimum": 0},  # flattened with its prefix
            "other": {"type": "object", "description": "there"},  # declared beside its builder
            "verdict": {"type": "boolean"},
        },
    }
    assert definitions(_Span) == {
        "span": {
            "type": "object",
            "required": ["low"],
            "properties": {"low": {"type": ["number", "null"]}, "high": {"type": "number"}},
        }
    }


def test_a_type_with_no_json_type_is_refused_by_name():
    assert type_schema(dict[str, int]) == {"type": "object"} and type_schema(bool) == {"type": "boolean"}
    with pytest.raises(TypeError, match="give type="):
        type_schema(str | int)
    with pytest.raises(LookupError, match="elsewhere.PART is declared elsewhere"):
        object_schema(_Part)


def _whole_level() -> dict:
    """A level line with every part, the ones declared beside their builders included."""
    from tests.unit.records.test_level_model import _full_record

    line = _full_record()
    line["energy"] = {
        "telemetry": "practice",
        "source": None,
        "energy_j": None,
        "mean_power_w": None,
        "j_per_output_token": None,
        "output_tokens_per_j": None,
        "reason": "no source gave energy",
        "sources": [{"source": "practice", "device": "0"}],
    }
    line["cost"] = {
        "basis": "per-hour",
        "price": 2.5,
        "per_million_output_tokens": None,
        "reason": "no tokens",
    }
    line["series"] = {
        "t_s": [0.0, 0.5],
        "server": {"vllm:num_requests_running": [1.0, None]},
        "client": {
            name: [0, 1]
            for name in ("in_flight_requests", "completed_requests", "failed_requests", "output_tokens")
        },
    }
    line["workers"] = [
        {
            "worker": "w1",
            "users": 2,
            "requests": 4,
            "returned": 3,
            "completed": 3,
            "cpu_percent": None,
            "late_share": 0.0,
            "ttft_p50_s": 0.1,
            "limited": False,
            "lost": "its heartbeats stopped",
        }
    ]
    line.pop("machine")  # another schema's part (machine.schema.json), checked there
    return line


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("backlog", "surprise"), 1),  # the backlog allows no other key
        (("series", "client", "output_tokens"), [-1, 0]),  # counts are never below 0
        (("workers", 0, "late_share"), 1.5),  # a share is at most 1
        (("energy", "method"), "guessed"),  # one of its words
        (("cost", "basis"), "per-day"),
        (("workload", "think_s"), -1),
        (("per_turn", 0, "cached_share"), 2),
        (("arrival_clock",), "wall"),
        (("endpoint",), ""),
    ],
)
def test_the_generated_schema_holds_each_part_to_its_declaration(where, value):
    from harness.records.notebook import problems

    line = _whole_level()
    assert problems(line, "level") == []
    target = line
    for step in where[:-1]:
        target = target[step]
    target[where[-1]] = value
    assert problems(line, "level"), f"{where} = {value!r} passed"


@dataclass(frozen=True)
class _Line:
    count: int = fact(required=True)
    inner: _Inner = fact(flatten="slo_")
    span: _Span | None = fact(default=None)  # left out while None
    low: float | None = fact(nullable=True, default=None)  # null is a value: written
    note: str | None = fact(key="why", default=None)


def test_a_line_holds_the_declared_keys_and_reads_back():
    from harness.schema_facts import line, read_line

    whole = _Line(3, _Inner(0.5), _Span(1.0), 2.0, "n")
    assert line(whole) == {"count": 3, "slo_ttft_s": 0.5, "span": {"low": 1.0}, "low": 2.0, "why": "n"}
    assert read_line(_Line, line(whole)) == whole
    bare = _Line(3, _Inner(0.5))
    assert line(bare) == {"count": 3, "slo_ttft_s": 0.5, "low": None}
    assert read_line(_Line, {"count": 3, "slo_ttft_s": 0.5}) == bare  # an old line lacks the rest


def test_the_speed_record_refuses_what_its_parts_refuse():
    from harness.records.engine import BothTests, ChatTemplate, EngineSpeed, SpeedLimit, TimingsCheck
    from harness.records.notebook import problems

    speed = EngineSpeed(
        "e", "1", "CPU", "h", "m", "q", 2048, "long", 3, 64, 0.2, 20.0, 100, 64, "usage", "length",
        ["content"], 0, True, 2300.0, 21.0, "2026-12-06T17:40:00Z",
        both=BothTests(2340.0, chat_template=ChatTemplate("0123456789ab", "GGUF")),
        server_timings_check=TimingsCheck(0.017, -0.048, 0.05, True, None),
        speed_limit=SpeedLimit("spark", 273.0, 4.9, 55.71, 0.359),
    )  # fmt: skip
    rec = speed.to_dict()
    assert problems(rec, "engine-speed") == [] and EngineSpeed.read(rec) == speed
    for bad in (
        {"speed_limit": {**rec["speed_limit"], "model_gb": 0}},
        {"server_timings_check": {**rec["server_timings_check"], "agree": "yes"}},
        {"chat_template": {"sha256": "not hex"}},
        {"test": "medium"},
    ):
        assert problems({**rec, **bad}, "engine-speed"), f"{bad} passed"


def test_a_sample_line_is_its_declared_line_and_reads_back():
    """The samples file's line is built from the instance's dict for speed: it says what ``line``
    says, its tags after, and reads back with its tags."""
    from harness.records.notebook import problems
    from harness.records.sample import SampleLine
    from harness.schema_facts import line

    row = SampleLine("c", 2, True, None, 0.1, 0.5, [0.1, 0.3], 2, "usage", None, None, 9, 0, "stop")
    assert row.to_dict() == line(row) and "ttft_absent" not in row.to_dict()
    tagged = SampleLine(**{**row.__dict__, "ttft_absent": "not streamed", "tags": {"turn": 2}})
    assert tagged.to_dict() == {**line(tagged), "turn": 2}
    assert SampleLine.read(tagged.to_dict()) == tagged and problems(tagged.to_dict(), "sample") == []
    assert problems({**row.to_dict(), "merged_tokens": -1}, "sample")


def test_compare_reads_the_kind_from_the_old_schemas_id(tmp_path, capsys):
    schemas = _script()
    for name, build in schemas.SCHEMAS.items():
        old = build()
        old["properties"] = dict(reversed(list(old["properties"].items())))
        path = tmp_path / name
        path.write_text(json.dumps(old), encoding="utf-8")
        assert schemas.main(["--compare", str(path)]) == 0, name
    assert capsys.readouterr().out.count("no difference in meaning") == len(schemas.SCHEMAS)
    other = tmp_path / "engine.schema.json"
    other.write_text(json.dumps({"$id": "engine"}), encoding="utf-8")
    assert schemas.main(["--compare", str(other)]) == 2
    assert "is no generated kind" in capsys.readouterr().err


def test_a_line_of_an_older_shape_reads_back_as_it_was():
    """A key an older line lacks reads as None and is left out again where null is no value of it,
    so a line read and written back is the line (and still valid)."""
    from harness.records.engine import Allocation, EngineSpeed
    from harness.records.notebook import problems

    alloc = {
        "harness_schema": 1,
        "record": "allocation",
        "engine": "llama-server",
        "log": "x.log",
        "settings": {},
        "observed": {},
        "predicted": {"log_lines": []},
        "verdict": "observed",
        "problems": [],
    }
    assert Allocation.read(alloc).to_dict() == alloc and problems(alloc, "allocation") == []
    speed = EngineSpeed(
        "e", "1", "CPU", "h", "m", "q", 2048, "short", 3, 64, 0.2, 20.0, 100, 64, "usage", "length",
        ["content"], 0, True, None, None, "2026-12-06T17:40:00Z",
    ).to_dict()  # fmt: skip
    lab = {k: v for k, v in speed.items() if k not in ("engine_version", "backend", "host", "max_tokens")}
    assert EngineSpeed.read(lab).to_dict() == lab and problems(lab, "engine-speed") == []


def test_each_features_record_reads_back_as_it_was():
    """A features line from a lab's notebook (the engines lab's fixture) reads as the typed record
    and writes back the same line, its verdicts kept whole."""
    from harness.records.base import is_features
    from harness.records.engine import Features
    from harness.records.notebook import problems, read_records

    found = read_records(
        ROOT / "tests/fixtures/notebooks/engines-spark.md", Features.KIND, select=is_features
    ).records
    assert found
    for record in found:
        typed = Features.read(record)
        assert typed.tool_calling["supported"] in (True, False)
        assert typed.to_dict() == record and problems(typed.to_dict(), Features.KIND) == []


@pytest.mark.parametrize(
    "name", ["practice-run", "practice-sweep", "llama-cpu-metrics", "llama-cpu-batch-level"]
)
def test_each_endpoint_check_reads_back_as_it_was(name):
    """An endpoint-check line from a real sweep's notebook (the practice server, the CPU
    llama-server; one proof that failed) reads as the typed record, what the proof saw as its part,
    and writes back."""
    from harness.records.base import EndpointCheck
    from harness.records.notebook import problems, read_records

    found = read_records(
        ROOT / f"tests/fixtures/notebooks/{name}.md",
        EndpointCheck.KIND,
        select=lambda o: o.get("record") == EndpointCheck.KIND,
    ).records
    assert found
    for record in found:
        typed = EndpointCheck.read(record)
        assert typed.observed.ok is bool(typed.observed.text_fields)  # a failed proof saw no text
        assert typed.to_dict() == record and problems(typed.to_dict(), EndpointCheck.KIND) == []


def test_each_memory_snapshot_reads_back_as_it_was():
    """The memory snapshots the engines lab's speed records hold read as the typed record, each
    source's figures (those the snapshot has) as its readings, and write back the same object."""
    from harness.records.base import is_engine_speed
    from harness.records.engine import SPEED, EngineSpeed, MemorySnapshot
    from harness.records.notebook import problems, read_records

    found = read_records(
        ROOT / "tests/fixtures/notebooks/engines-spark.md", EngineSpeed.KIND, select=is_engine_speed
    ).records
    snaps = [r[SPEED.memory] for r in found if r.get(SPEED.memory)]
    assert snaps
    for snap in snaps:
        typed = MemorySnapshot.read(snap)
        assert typed.mem_total_mb > 0
        assert set(typed.readings) == set(snap) - {"taken_at", "system", "hostname"} - {
            "mem_total_mb",
            "mem_available_mb",
            "swap_free_mb",
        }
        assert typed.to_dict() == snap and problems(snap, MemorySnapshot.KIND) == []
