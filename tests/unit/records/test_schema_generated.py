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

from harness.records.schema import definitions, fact, object_schema, type_schema
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
