"""The SSE parser on a recorded real llama-server stream and on hand-made edge cases."""

import pytest

from harness.endpoints.chat import chat_parser
from tests.conftest import FIXTURES

STREAMS = FIXTURES / "streams"


def parse(lines, t0=0.0, step=0.01):
    p = chat_parser(t0)
    for i, line in enumerate(lines):
        p.feed(line, t0 + (i + 1) * step)
    return p.finish(t0 + (len(lines) + 1) * step)


def test_real_llama_server_stream():
    lines = STREAMS.joinpath("llama-server-gemma3-cpu.sse").read_bytes().split(b"\n")
    s = parse(lines)
    assert s.ok
    assert s.token_source == "usage" and s.output_tokens == 12 and s.prompt_tokens == 27
    assert s.cached_tokens == 0 and s.timings["predicted_n"] == 12
    assert s.finish_reason == "length" and s.fields == ["content"]
    # the role chunk (content null) is not the first token
    assert s.t_first > s.t_send + 0.01 * 2 - 1e-9


def vllm_lines(n=3, usage=True, done=True, finish="stop"):
    out = ['data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}']
    out += ['data: {"choices":[{"index":0,"delta":{"reasoning":"hmm"}}]}']
    out += [f'data: {{"choices":[{{"index":0,"delta":{{"content":"w{i}"}}}}]}}' for i in range(n)]
    if finish:
        out.append(f'data: {{"choices":[{{"index":0,"delta":{{}},"finish_reason":"{finish}"}}]}}')
    if usage:
        out.append(
            'data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,'
            '"prompt_tokens_details":{"cached_tokens":5}}}'
        )
    if done:
        out.append("data: [DONE]")
    return out


def test_vllm_shape_reasoning_counts_as_first_token():
    s = parse(vllm_lines())
    assert s.ok and s.fields == ["reasoning", "content"]
    assert s.ttft == 0.02  # the empty-content role chunk at 0.01 does not count
    assert s.output_tokens == 4 and s.cached_tokens == 5
    assert s.tpot == (s.token_times[-1] - s.t_first) / 3  # to the last token, not the [DONE]


def test_no_usage_falls_back_to_counting_deltas():
    s = parse(vllm_lines(usage=False))
    assert s.ok and s.token_source == "deltas" and s.output_tokens == 4 and s.cached_tokens is None


def test_cache_n_from_timings_when_usage_has_no_details():
    lines = [
        'data: {"choices":[{"delta":{"content":"a"}}]}',
        'data: {"choices":[{"delta":{},"finish_reason":"stop"}],"timings":{"cache_n":7}}',
        "data: [DONE]",
    ]
    assert parse(lines).cached_tokens == 7


def test_stream_without_done_or_finish_is_incomplete():
    assert parse(vllm_lines(done=False)).error.startswith("IncompleteStream")
    assert "finish reason" in parse(vllm_lines(finish=None)).error


def test_malformed_line_and_error_event():
    lines = vllm_lines()
    lines.insert(3, 'data: {"choices":[{"delta":{"content":"x')
    assert parse(lines).error.startswith("MalformedSSE")
    err = parse(['data: {"error":{"message":"boom","code":500}}'])
    assert err.error == "StreamError: boom" and not err.ok


def test_tool_call_delta_is_a_token():
    call = '{"index":0,"function":{"name":"f","arguments":""}}'
    lines = [
        'data: {"choices":[{"delta":{"tool_calls":[' + call + "]}}]}",
        'data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}]}',
        "data: [DONE]",
    ]
    s = parse(lines)
    assert s.ok and s.fields == ["tool_calls"] and s.ttft == 0.01


@pytest.mark.parametrize(
    "name,fields,tokens,source,cached,finish",
    [
        ("vllm-reasoning.sse", ["reasoning", "content"], 4, "usage", 16, "length"),
        ("vllm-tool-call.sse", ["tool_calls"], 12, "usage", None, "tool_calls"),
        ("mlx-lm.sse", ["reasoning", "content"], 3, "usage", 8, "stop"),
        # recorded: keep-alive comments before the first token, finish on an empty delta, usage in a
        # last chunk with no choices
        ("mlx-lm-0.32.2-cpu.sse", ["content"], 6, "usage", 0, "length"),
        ("trtllm-reasoning-content.sse", ["reasoning_content", "content"], 2, "usage", None, "stop"),
    ],
)
def test_engine_stream_shapes(name, fields, tokens, source, cached, finish):
    lines = STREAMS.joinpath(name).read_bytes().split(b"\n")
    s = parse(lines)
    assert s.ok, s.error
    assert (s.fields, s.output_tokens, s.token_source, s.cached_tokens, s.finish_reason) == (
        fields,
        tokens,
        source,
        cached,
        finish,
    )
    assert s.request_id.startswith("chatcmpl-")
