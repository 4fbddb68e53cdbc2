"""Property-based tests of the SSE parser: any split of a valid stream into reads gives the same
sample, and nothing a server sends raises out of the parser."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.measure.sse_lines import LineSplitter
from harness.endpoints.chat import chat_parser
from tests.unit.properties import examples

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


def stream_bytes(tokens: list[str], multiline: bool, crlf: bool) -> bytes:
    """A valid OpenAI-style stream: a role chunk, the tokens, a finish, usage, [DONE]."""
    events = [{"id": "x", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    events += [{"id": "x", "choices": [{"index": 0, "delta": {"content": t}}]} for t in tokens]
    events.append({"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    events.append({"id": "x", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": len(tokens)}})
    out = []
    for e in events:
        text = json.dumps(e)
        if multiline:  # the SSE rule: one event over several data: lines, joined by newlines
            cut = text.index(",") + 1
            out.append(f"data: {text[:cut]}\ndata: {text[cut:]}\n\n")
        else:
            out.append(f"data: {text}\n\n")
    out.append("data: [DONE]\n\n")
    body = "".join(out)
    return (body.replace("\n", "\r\n") if crlf else body).encode()


def parse(chunks: list[bytes]):
    parser, splitter = chat_parser(0.0), LineSplitter()
    t = 0.0
    for chunk in chunks:
        t += 1.0
        for line in splitter.feed(chunk):
            parser.feed(line, t)
    for line in splitter.end():
        parser.feed(line, t)
    return parser.finish(t + 1)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, last = [], 0
    for p in points:
        pieces.append(data[last:p])
        last = p
    pieces.append(data[last:])
    return pieces


@settings(max_examples=examples(200))
@given(
    st.lists(TEXT, min_size=1, max_size=8),
    st.booleans(),
    st.booleans(),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=30),
)
def test_any_split_of_a_valid_stream_gives_the_same_sample(tokens, multiline, crlf, cuts):
    data = stream_bytes(tokens, multiline, crlf)
    whole = parse([data])
    pieces = parse(split(data, cuts))
    assert whole.ok and pieces.ok, (whole.error, pieces.error)
    assert pieces.text == whole.text == "".join(tokens)
    assert pieces.output_tokens == whole.output_tokens == len(tokens)
    assert pieces.finish_reason == "stop" and pieces.token_source == "usage"
    assert len(pieces.token_times) == len(tokens)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "choices",
                    "delta",
                    "content",
                    "usage",
                    "error",
                    "finish_reason",
                    "completion_tokens",
                    "prompt_tokens_details",
                    "cached_tokens",
                    "timings",
                    "cache_n",
                    "tool_calls",
                    "id",
                    "message",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=examples(300))
@given(
    st.lists(st.binary(max_size=200) | JSONISH.map(lambda o: b"data: " + json.dumps(o).encode()), max_size=20)
)
def test_garbage_never_raises_out_of_the_parser(lines):
    parser = chat_parser(0.0)
    for i, line in enumerate(lines):
        parser.feed(line, float(i))
    sample = parser.finish(float(len(lines)))
    assert sample.ok or sample.error
    assert sample.output_tokens is None or sample.output_tokens >= 0


@settings(max_examples=examples(200))
@given(st.binary(max_size=400), st.lists(st.integers(min_value=0, max_value=500), max_size=10))
def test_line_splitter_loses_no_byte_but_line_ends(data, cuts):
    splitter, lines = LineSplitter(), []
    for piece in split(data, cuts):
        lines += splitter.feed(piece)
    lines += splitter.end()
    assert b"".join(lines) == data.replace(b"\r", b"").replace(b"\n", b"")
