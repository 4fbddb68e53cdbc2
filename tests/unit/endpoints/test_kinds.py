"""The endpoint kinds as the rest of the harness sees them: every option that names a kind offers
exactly ``KINDS``; a path, a body and a parser come from the kind; a level of answers that were
not streamed records no TTFT but the reason, and its record validates."""

from __future__ import annotations

import argparse
import json

import pytest

from harness.cli import build_parser
from harness.records.level import LevelContext
from harness.measure.levels import level_record
from harness.measure.sample import Sample
from harness.workloads.request import Request
from harness.endpoints import KINDS, BodySettings, api_path, body_of, kind_named
from harness.records.notebook import validate
from harness.endpoints import urls


def sub(name: str) -> argparse.ArgumentParser:
    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return action.choices[name]


@pytest.mark.parametrize("command", ["sweep", "capacity"])
def test_the_endpoint_option_offers_every_kind(command):
    (option,) = [a for a in sub(command)._actions if "--endpoint" in a.option_strings]
    assert list(option.choices) == list(KINDS) and option.default == "chat"


def test_each_kind_names_its_path_under_the_base_path():
    chat = kind_named("chat")
    assert api_path("/v1", chat) == "/v1/chat/completions" == api_path("/v1/", chat)
    assert api_path("", chat) == "/chat/completions"
    assert urls.chat_url("http://h:8000/v1", "/v1") == "http://h:8000/v1/chat/completions"
    for name, kind in KINDS.items():
        assert kind.name == name and kind.path.startswith("/")
        assert urls.chat_path("http://h:8000", "/v1", name) == "/v1" + kind.path
    with pytest.raises(ValueError, match="no endpoint kind 'nope'"):
        kind_named("nope")


def test_the_chat_body_is_the_body_sent_before_there_were_kinds():
    job = Request([{"role": "user", "content": "hi"}], max_tokens=7, force_length=True, extra={"tools": []})
    body = kind_named("chat").body(job, BodySettings("m", 32, 0.0))
    assert body == {
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 7,
        "temperature": 0.0,
        "tools": [],
        "min_tokens": 7,
        "ignore_eos": True,
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    # the proof's and the probes' chat-shaped bodies keep every field, and send none they lack
    fields = {"messages": [{"role": "user", "content": "x"}], "max_tokens": 8, "seed": 3}
    assert body_of(kind_named("chat"), fields) == {
        **fields,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def not_streamed(t_send: float, ok: bool = True) -> Sample:
    s = Sample(t_send=t_send, ok=ok, t_end=t_send + 0.5, output_tokens=10, token_source="usage")
    s.ttft_absent = "not streamed: the answer arrives whole"
    s.finish_reason = "length"
    return s


def test_a_level_of_answers_not_streamed_has_no_ttft_and_says_why():
    context = LevelContext("l", "e", "m", "http://h/v1", "mixed", 10, 0.0, endpoint="a-kind")
    record = level_record([not_streamed(0.0), not_streamed(0.1)], 2, 1.0, context, "now").to_dict()
    assert list(record)[list(record).index("base_url") + 1] == "endpoint" and record["endpoint"] == "a-kind"
    assert record["ttft_absent"] == "not streamed: the answer arrives whole"
    assert record["ttft_s"]["p50"] is None and record["tpot_s"]["p50"] is None
    assert record["e2e_s"]["p50"] == 0.5 and record["output_tokens_per_s"] == 20.0
    validate(json.loads(json.dumps(record)), "level")
    streamed = Sample(t_send=0.0, ok=True, t_first=0.1, t_end=0.5, output_tokens=3, finish_reason="stop")
    chat = LevelContext("l", "e", "m", "http://h/v1", "mixed", 10, 0.0)  # chat: no endpoint field, as ever
    mixed = level_record([streamed, not_streamed(0.0)], 2, 1.0, chat, "now").to_dict()
    assert "ttft_absent" not in mixed and "endpoint" not in mixed and mixed["ttft_s"]["p50"] == 0.1
