"""The load's fast read path gives exactly what the general path gives, for the same bytes.

``read_stream`` takes a read's lines at once (``take_lines``) and the parser takes the common
lines (``data: {...}`` and the blank line after it) and the common delta (one content piece) by
short cuts. The reference here is the general path they stand in for: ``body_lines`` one line at a
time, every line through ``StreamParser.line`` and every choice through ``ChatAnswer.choice``,
with the per-line loop ``read_stream`` had. Both read the same bytes split into reads at every
boundary (and at random sets of boundaries), each read with its own time, stamp flag, lag and
bound; every field of the sample, the size, the error and what is left unread must be equal (after
``[DONE]`` nothing more is read, so the bytes left then are not compared)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.measure import stream
from harness.measure.sse_lines import take_lines
from harness.measure.stream import StreamParser
from harness.endpoints.chat import ChatAnswer, chat_parser
from harness.load.socket_client import Head, body_lines, read_head, read_stream
from tests.unit.properties import examples


class GeneralAnswer(ChatAnswer):
    """Every choice through ``choice``: no short cut."""

    def _choice(self, choice, t):
        self.choice(choice, t)


class GeneralParser(StreamParser):
    """Every line through ``line``: no short cut."""

    def feed(self, line, t):
        self.line(line, t)


def general_parser(t_send, text_limit):
    return GeneralParser(GeneralAnswer(t_send, text_limit))


def general_read_stream(reads, head, first, parser) -> int:
    """``read_stream`` as it was: one line of ``body_lines`` at a time."""
    s = parser.s
    stamped, tokens, size = False, s.token_times, 0
    last_n, last_wait = -1, None
    for line, read, n in body_lines(reads, head, first):
        size += len(line)
        before = len(tokens)
        parser.feed(line, read[1])
        if s.saw_done:
            break
        stamped = stamped or read[2]
        if len(tokens) == before or read[3] is None:
            continue
        if n == last_n:
            s.merged_tokens += 1
            s.first_merged = s.first_merged or before == 1
            last_wait = read[4]
        if last_wait is not None:
            s.read_lags.append(last_wait)
        last_n, last_wait = n, read[3]
    if last_wait is not None:
        s.read_lags.append(last_wait)
    s.clock = "kernel" if stamped else "read"
    return size


def chunk(event: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(event), event)


def event(delta: dict, finish=None, **extra) -> bytes:
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    body.update(choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], **extra)
    return b"data: " + json.dumps(body, separators=(",", ":")).encode()


CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
CLOSED = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"


def ruler_like(end: bytes = b"\n\n") -> bytes:
    """The practice server's shape: one event per chunk, then finish, [DONE] and the last chunk."""
    events = [event({"role": "assistant", "content": ""})]
    events += [event({"content": t}) for t in ["The", " weights", ' "so"', " a\\b", " é", "\n"]]
    events += [event({}, "length"), b"data: [DONE]"]
    return CHUNKED + b"".join(chunk(e + end) for e in events) + b"0\r\n\r\n"


STREAMS = {
    "ruler": ruler_like(),
    "crlf": ruler_like(b"\r\n\r\n"),
    "bare cr": ruler_like(b"\r\r"),
    "close-delimited, odd lines": CLOSED
    + b": keep-alive\n\n"
    + event({"reasoning_content": "hm"})
    + b"\n\n"
    + b'data: {"choices":[{"delta":\ndata: {"content":"multi"}}]}\n\n'
    + b"data:"
    + event({"content": "no space"})[5:]
    + b"\n\n"
    + event({"content": "x", "reasoning": "y"})
    + b"\x0c\n\n"
    + b'data: {"choices":[{"delta":{"content":"broken"\n\n'
    + event({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]})
    + b"\n\n"
    + event({"content": "ok"}, usage={"completion_tokens": 9})
    + b" \n\n"
    + b'data: {"choices":[{"delta":{"content":"a"}}]}  extra\n\n'
    + b"data: \xff\xfe{}\n\n"
    + b'error: {"message": "late"}\n\n'
    + event({}, "stop")
    + b"\n\ndata: [DONE]\n\n"
    + event({"content": "after done"})
    + b"\n\n",
    "cut": CLOSED + event({"content": "a"}) + b"\n\n" + event({"content": "b"}),
}


def run(path: str, pieces: list[bytes], text_limit: int) -> tuple:
    """Read ``pieces`` (one per read) with one path; everything either path can show."""
    reads_list = [
        (p, 0.01 * (k + 1), k % 3 != 2, None if k % 5 == 4 else 0.001 * (k + 1), 0.002 * (k + 1))
        for k, p in enumerate(pieces)
    ]
    reads = iter([*reads_list, (b"", 9.0, False, None, 0.0)])
    parser = (general_parser if path == "general" else chat_parser)(0.0, text_limit)
    head = Head()
    size, error = None, None
    try:
        first = read_head(reads, head)
        size = (general_read_stream if path == "general" else read_stream)(reads, head, first, parser)
    except Exception as exc:  # noqa: BLE001  (the same error, whatever it is, is the point)
        error = f"{type(exc).__name__}: {exc}"
    sample = dataclasses.asdict(parser.finish(10.0))
    # what is left of the body after [DONE] is never read (a fast path may have split it already)
    left = bytes(head.body) if not sample["saw_done"] else b"-"
    return sample, size, error, head.message_complete, left, next(reads, None)


def same(pieces: list[bytes], text_limit: int = 1 << 20) -> None:
    fast, general = run("fast", pieces, text_limit), run("general", pieces, text_limit)
    assert fast == general


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_every_split_into_two_reads_gives_the_same_sample(name):
    data = STREAMS[name]
    same([data])
    for i in range(1, len(data)):
        same([data[:i], data[i:]])


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_one_byte_a_read_and_a_cut_text_give_the_same_sample(name):
    data = STREAMS[name]
    same([data[i : i + 1] for i in range(len(data))])
    same([data], text_limit=5)


@settings(max_examples=examples(200))
@given(st.sampled_from(sorted(STREAMS)), st.lists(st.integers(1, 300), max_size=30))
def test_any_split_gives_the_same_sample(name, cuts):
    data, pieces, at = STREAMS[name], [], 0
    for n in cuts:
        pieces.append(data[at : at + n])
        at += n
    pieces.append(data[at:])
    same([p for p in pieces if p])


def test_the_ruler_stream_is_read_in_full():
    sample, size, error, complete, left, _ = run("fast", [STREAMS["ruler"]], 1 << 20)
    assert error is None and complete
    assert sample["ok"] and len(sample["token_times"]) == 6 and sample["text"] == 'The weights "so" a\\b é\n'
    body = STREAMS["ruler"][len(CHUNKED) :]
    events = [part for part in body.split(b"\r\n") if part.startswith(b"data:")]  # each with its \n\n
    assert size == sum(len(e) for e in events) - 1  # up to [DONE]'s line, not the blank after it


@settings(max_examples=examples(500))
@given(st.binary(max_size=60) | st.text(max_size=60).map(str.encode))
def test_the_event_scanner_reads_as_the_general_decoder(tail):
    data = b"{" + tail
    fast = stream._json_object(data)
    general = stream._json(data.strip())
    assert (fast is stream._BAD) == (general is stream._BAD) or (
        fast is stream._BAD and data.strip() != data  # the general path strips \x0b, \x0c first
    )
    if fast is not stream._BAD:
        assert fast == general


@given(st.binary(max_size=40).map(bytearray))
def test_take_lines_takes_what_body_lines_would(buf):
    rest = bytearray(buf)
    lines = take_lines(rest)
    assert b"".join(lines) + rest == buf
    for line in lines:
        assert (
            line.endswith((b"\n", b"\r")) and line.count(b"\n") + line.count(b"\r") - line.count(b"\r\n") == 1
        )
    assert b"\n" not in rest and b"\r" not in rest[:-1]
