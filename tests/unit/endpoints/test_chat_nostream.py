"""Chat without streaming: the body asks for one whole answer, and the answer (the CPU
llama-server's, recorded; the practice server's shape with tool calls and reasoning) is read into
a sample with its end-to-end time, text, finish reason and usage, and no first token: TTFT absent
with its reason. What is no whole answer is an error in a line, never a success."""

from __future__ import annotations

import json

import pytest

from harness.measure.sample import decode_rate
from harness.workloads.request import Request
from harness.endpoints import KINDS, BodySettings
from harness.endpoints.chat_nostream import KIND, NOT_STREAMED
from tests.corpus_samples import samples

RECORDED = "streams/llama-b11434-cpu-chat-whole-answer.json"


def read(body: bytes, t_send: float = 0.0, t_end: float = 0.5, error: str | None = None):
    parser = KIND.parser(t_send)
    parser.feed_body(body, t_end)
    return parser.finish(t_end, error)


def test_the_kind_is_listed_and_does_not_stream():
    assert KINDS["chat-nostream"] is KIND and KIND.path == "/chat/completions" and not KIND.streamed


def test_the_body_asks_for_one_whole_answer():
    job = Request([{"role": "user", "content": "hi"}], max_tokens=4)
    assert KIND.body(job, BodySettings("m", 32, 0.0)) == {
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 4,
        "temperature": 0.0,
        "model": "m",
        "stream": False,
    }


def test_the_recorded_llama_server_answer():
    (sample,) = [s for s in samples("whole-answer") if s.id == RECORDED]
    s, want = read(sample.body.encode(), 1.0, 4.5), sample.expect
    assert s.ok, s.error
    assert (s.output_tokens, s.prompt_tokens, s.cached_tokens) == (
        want["output_tokens"],
        want["prompt_tokens"],
        want["cached_tokens"],
    )
    assert (
        s.token_source == "usage" and s.finish_reason == want["finish_reason"] and s.fields == want["fields"]
    )
    assert s.text == "<|im_end|>\n<|im_start" and s.timings["predicted_n"] == 12
    assert s.t_first is None and s.ttft is None and s.tpot is None and s.itl == [] and s.token_times == []
    assert s.ttft_absent == NOT_STREAMED and decode_rate(s)[0] is None
    assert s.t_end - s.t_departed == pytest.approx(3.5)  # the end-to-end time stays


def test_a_whole_answer_with_reasoning_and_a_tool_call():
    answer = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "reasoning": "let me think",
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                        {"id": "call_2", "type": "function", "function": {"name": "g", "arguments": "[]"}},
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 4}},
    }
    s = read(json.dumps(answer).encode())
    assert s.ok and s.fields == ["reasoning", "tool_calls"] and s.finish_reason == "tool_calls"
    assert [c["name"] for c in s.tool_calls] == ["f", "g"] and s.request_id == "chatcmpl-1"
    assert (s.output_tokens, s.cached_tokens, s.text) == (20, 4, "")


@pytest.mark.parametrize(
    "body, error",
    [
        (b'{"error": {"message": "model not loaded"}}', "ServerError: model not loaded"),
        (b'data: {"choices":[{"delta":{"content":"a"}}]}\n\n', "Streamed: an event stream came"),
        (b"<html>busy</html>", "NotJSON: the answer is no JSON object: '<html>busy</html>'"),
        (b'{"choices": [{"message": {"content": "a"}}]}', "IncompleteAnswer: the answer carried no finish"),
        (
            b'{"choices": [{"message": {"content": ""}, "finish_reason": "stop"}]}',
            "NoText: the answer carried",
        ),
    ],
)
def test_what_is_no_whole_answer_is_an_error(body, error):
    s = read(body)
    assert not s.ok and s.error.startswith(error) and s.ttft_absent == NOT_STREAMED


def test_an_answer_without_usage_has_no_token_count_and_says_so():
    s = read(b'{"choices": [{"message": {"content": "a b c"}, "finish_reason": "stop"}]}')
    assert s.ok and s.output_tokens is None and s.token_source is None
    assert s.usage_note == "the whole answer carried no usage: its output tokens are not known"


def test_a_request_that_failed_before_its_answer_keeps_that_error():
    parser = KIND.parser(0.0)
    s = parser.finish(1.0, "Timeout: no byte from the server for 5 s (the idle bound)")
    assert not s.ok and s.error.startswith("Timeout") and s.ttft_absent == NOT_STREAMED
