"""Pure parts of the practice server: tokeniser, profiles, reply plans."""

import json
import random

import jsonschema
import pytest
import yaml

from harness.errors import ConfigError, SchemaError
from harness.practice import profile as profiles
from harness.practice.replies import example_for, plan_reply
from harness.practice.tokenizer import encode, encode_chat, pieces


def test_tokeniser_is_stable_and_plausible():
    text = "The quick brown fox jumps over the extraordinarily lazy dog, twice."
    assert encode(text) == encode(text)
    ratio = len(pieces(text)) / len(text.split())
    assert 1.0 <= ratio <= 1.6
    assert "".join(pieces(text)) == text


def test_chat_template_adds_a_few_tokens_and_a_tag_first_changes_the_start():
    plain = encode_chat([{"role": "user", "content": "hello"}])
    assert 5 <= len(plain) - len(encode("hello")) <= 10
    a = encode_chat([{"role": "user", "content": "tag-1\nsame text"}])
    b = encode_chat([{"role": "user", "content": "tag-2\nsame text"}])
    from harness.practice.prefix import common_prefix

    assert 4 <= common_prefix(a, b) < 8  # only the template and the tag's first pieces are shared


@pytest.mark.parametrize("name", profiles.available())
def test_every_shipped_profile_loads(name):
    p = profiles.load_profile(name)
    assert p.name == name and p.raw["seats"] >= 1


def test_kit_profile_is_the_seed_kit():
    p = profiles.load_profile("kit")
    assert p.raw["seats"] == 8 and p.mode == "llama"
    t = p.timing
    assert 1 / (t["step_base_s"] + t["step_per_seq_s"]) == pytest.approx(55, abs=1)


def test_bad_profiles_say_what_is_wrong(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        profiles.load_profile("nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "b",
                "mode": "llama",
                "model": {"id": "m", "size_gb": 1},
                "seats": 0,
                "ctx_per_seat": 100,
                "timing": {"kind": "fixed"},
            }
        )
    )
    with pytest.raises(SchemaError, match="seats"):
        profiles.load_profile(str(bad))
    with pytest.raises(ConfigError, match="override"):
        profiles.load_profile("kit", {"seats": -1})


SCHEMAS = [
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
        "required": ["city"],
    },
    {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 2},
            "xs": {"type": "array", "minItems": 2, "items": {"type": "number"}},
        },
    },
    {
        "type": "object",
        "properties": {
            "ok": {"type": "boolean"},
            "v": {"anyOf": [{"type": "null"}, {"type": "string"}]},
            "name": {"type": "string", "minLength": 12},
        },
    },
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_examples_satisfy_their_schema(schema):
    jsonschema.validate(example_for(schema), schema)


def test_reply_plans_stop_on_length_or_stop():
    prof = profiles.load_profile("kit").raw
    fixed = {**prof, "output": {"length": {"kind": "fixed", "tokens": 5}, "thinking_tokens": 0}}
    short = plan_reply({"messages": []}, fixed, random.Random(1), max_tokens=10)
    assert len(short.pieces) == 5 and short.finish_reason == "stop"
    capped = plan_reply({"messages": []}, fixed, random.Random(1), max_tokens=3)
    assert len(capped.pieces) == 3 and capped.finish_reason == "length"


def test_json_reply_plan_joins_to_valid_json():
    prof = profiles.load_profile("vllm").raw
    req = {
        "response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMAS[0]}},
        "chat_template_kwargs": {"enable_thinking": False},
    }
    plan = plan_reply(req, prof, random.Random(1), max_tokens=200)
    assert {f for f, _ in plan.pieces} == {"content"}
    jsonschema.validate(json.loads("".join(t for _, t in plan.pieces)), SCHEMAS[0])
