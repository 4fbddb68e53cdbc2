"""Each record model names its kind once (``KIND``): the schema it is validated against, and the
``record`` word its lines carry where its schema asks for one."""

from __future__ import annotations

import pytest

from harness.records import engine as er, level as lr, base as r, sizing as sz
from harness.records.notebook import SCHEMA_DIR, load_schema

MODELS = [
    lr.LevelRecord,
    r.CurveSummary,
    sz.Capacity,
    r.EndpointCheck,
    r.CrossCheck,
    sz.AdmissionRecommendation,
    er.Allocation,
    er.Features,
    er.EngineSpeed,
    er.MemorySnapshot,
    er.ModelFetch,
]


def test_the_kinds_are_distinct_and_each_has_its_schema():
    kinds = [m.KIND for m in MODELS]
    assert len(set(kinds)) == len(kinds)
    assert set(kinds) <= {p.name.removesuffix(".schema.json") for p in SCHEMA_DIR.glob("*.schema.json")}


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_a_kinds_record_word_is_its_schemas(model):
    schema = load_schema(model.KIND)
    assert schema["$id"] == model.KIND
    word = schema["properties"].get("record", {})
    if "const" in word:  # the schema asks every line of it to say its kind
        assert word["const"] == model.KIND
