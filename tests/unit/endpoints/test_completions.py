"""Streamed text completions: the body (a template-free prompt, the sampling fields, a stream with
its usage) and the answer read from recorded streams (the CPU llama-server's, and the corpus's
other text completion streams, which the chat parser read the same way before)."""

from __future__ import annotations

import dataclasses

import pytest

from harness.workloads.request import Request
from harness.endpoints import KINDS, BodySettings
from harness.endpoints.chat import chat_parser
from harness.endpoints.completions import KIND, prompt_text
from tests.corpus_samples import samples

RECORDED = "streams/llama-b11434-cpu-v1-completions-usage.sse"


def read(body: str, parser):
    lines = body.split("\n")
    for i, line in enumerate(lines):
        parser.feed(line.encode() + b"\n", 0.01 * (i + 1))
    return parser.finish(0.01 * (len(lines) + 1))


def text_streams():
    return [s for s in samples("stream") if "fields" in s.expect and s.expect["fields"] == ["text"]]


def test_the_kind_is_listed_and_streams():
    assert KINDS["completions"] is KIND and KIND.path == "/completions" and KIND.streamed


def test_the_recorded_llama_server_stream():
    (sample,) = [s for s in samples("stream") if s.id == RECORDED]
    s = read(sample.body, KIND.parser(0.0))
    assert s.ok, s.error
    assert (s.output_tokens, s.token_source, s.prompt_tokens, s.cached_tokens) == (8, "usage", 6, 0)
    assert s.fields == ["text"] and s.finish_reason == "length" and s.saw_done
    assert s.text == " red, blue and yellow.\n\nThe" and len(s.token_times) == 8
    assert s.t_first == pytest.approx(0.01) and s.ttft_absent is None  # the first event's arrival
    assert s.timings["predicted_n"] == 8 and s.request_id.startswith("chatcmpl-")


@pytest.mark.parametrize("sample", text_streams(), ids=lambda s: s.id)
def test_every_text_stream_reads_as_the_chat_parser_read_it(sample):
    assert len(text_streams()) >= 2
    mine = dataclasses.asdict(read(sample.body, KIND.parser(0.0)))
    assert mine == dataclasses.asdict(read(sample.body, chat_parser(0.0)))


def test_a_chat_delta_is_no_text_of_a_completion():
    parser = KIND.parser(0.0)
    parser.feed(b'data: {"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}\n', 0.1)
    parser.feed(b"data: [DONE]\n", 0.2)
    s = parser.finish(0.3)
    assert not s.ok and s.error.startswith("NoText") and s.fields == []


def test_the_body_is_a_prompt_without_a_template():
    job = Request(
        [{"role": "user", "content": "Once"}], max_tokens=5, force_length=True, extra={"tools": [1]}
    )
    assert KIND.body(job, BodySettings("m", 32, 0.0)) == {
        "prompt": "Once",
        "max_tokens": 5,
        "temperature": 0.0,
        "min_tokens": 5,
        "ignore_eos": True,
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    talk = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": " there"}]},
        {"role": "assistant", "content": None},
        {"role": "user", "content": "Again"},
    ]
    assert prompt_text(talk) == "Be brief.\n\nHi there\n\nAgain"
    assert "messages" not in KIND.body(Request(talk), BodySettings())
