"""The load's header reader (reliability round two, classes 1, 2 and 9): bounded in bytes and fields, interim
1xx answers skipped, a header sent twice read as one string; property-tested with Hypothesis."""

from __future__ import annotations

import time

import pytest
from geventhttpclient.response import HTTPParseError
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.endpoints.http_client import stream_problem
from harness.load.socket_client import (
    MAX_HEAD,
    MAX_HEADERS,
    MAX_LINE,
    Head,
    HeadTooLarge,
    LineTooLong,
    Stale,
    body_lines,
    read_head,
)
from harness.load.arrival_stamps import StreamCut
from tests.unit.properties import examples

ALLOWED = (HeadTooLarge, StreamCut, Stale, HTTPParseError)


def _reads(pieces):
    """The reads a socket would give: each piece, then the close."""
    for p in [*pieces, b""]:
        yield p, time.perf_counter(), False, None, 0.0


def test_an_endless_header_ends_at_the_cap_not_in_memory():
    def endless():
        yield b"HTTP/1.1 200 OK\r\n", 0.0, False, None, 0.0
        n = 0
        while True:
            n += 1
            yield b"X-Pad-%d: %s\r\n" % (n, b"y" * 1000), 0.0, False, None, 0.0

    with pytest.raises(HeadTooLarge):
        read_head(endless(), Head())


def test_too_many_header_fields_are_refused():
    head = b"HTTP/1.1 200 OK\r\n" + b"".join(b"A%d: b\r\n" % i for i in range(MAX_HEADERS + 5))
    with pytest.raises(HeadTooLarge):
        read_head(_reads([head[i : i + 50] for i in range(0, len(head), 50)]), Head())


def test_early_hints_before_the_answer_are_skipped():
    data = b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    head = Head()
    read_head(_reads([data]), head)
    assert head.get_code() == 200


def test_a_header_sent_twice_reads_as_one_string():
    data = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Type: text/event-stream\r\n"
        b"Content-Encoding: identity\r\nContent-Encoding: identity\r\nContent-Length: 0\r\n\r\n"
    )
    head = Head()
    read_head(_reads([data]), head)
    assert head.header("content-type") == "text/event-stream, text/event-stream"
    assert stream_problem(200, head.header("content-encoding")) is None
    assert stream_problem(200, "identity, gzip").startswith("Compressed: ")


def test_an_endless_body_line_ends_at_the_cap():
    head = Head()
    first = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n", 0.0, False, None, 0.0)
    head.feed(first[0])

    def more():
        while True:
            yield b"x" * 65536, 0.0, False, None, 0.0

    with pytest.raises(LineTooLong):
        for _ in body_lines(more(), head, first):
            pass
    assert len(head.body) <= MAX_LINE + 65536


@settings(max_examples=examples(300))
@given(st.binary(max_size=4000), st.lists(st.integers(1, 200), max_size=40))
def test_any_bytes_end_in_a_head_or_one_known_error(data, cuts):
    pieces, at = [], 0
    for n in cuts:
        pieces.append(data[at : at + n])
        at += n
    pieces.append(data[at:])
    pieces = [p for p in pieces if p]
    head = Head()
    try:
        read_head(_reads(pieces), head)
    except ALLOWED:
        return
    assert head.headers_complete and head.get_code() >= 200


@settings(max_examples=examples(100))
@given(
    st.integers(0, 3),
    st.lists(
        st.tuples(st.sampled_from(["Content-Type", "X-A", "Link"]), st.text("abc/; =", max_size=20)),
        max_size=30,
    ),
    st.integers(1, 64),
)
def test_well_formed_heads_split_anywhere_read_the_same(interim, fields, step):
    lines = b"".join(b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" for _ in range(interim))
    lines += b"HTTP/1.1 200 OK\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in fields)
    lines += b"Content-Length: 0\r\n\r\n"
    head = Head()
    read_head(_reads([lines[i : i + step] for i in range(0, len(lines), step)]), head)
    assert head.get_code() == 200
    assert len(lines) < MAX_HEAD
    for name in {k for k, _ in fields}:
        values = [v.strip() for k, v in fields if k == name]
        assert head.header(name) == ", ".join(values)
