#!/usr/bin/env python3
"""The load's read path without sockets: CPU per token of turning bytes into a sample (a benchmark).

A stream shaped as the practice server's ruler writes it (a role chunk, 128 content events of
one chunk each, a finish, ``[DONE]``) goes through what ``harness sweep`` runs on every read: the
HTTP parser, ``read_stream`` (a read's lines at once) and the SSE parser, one read per server
write, as a client that keeps up reads them. Process CPU time over the tokens, best of ``--repeat``
runs (other work on the machine only adds). The general path (one line at a time, no short cut:
what the fast path is tested against, tests/unit/load/test_read_path_exact.py) is timed beside it.

    .venv/bin/python scripts/bench_parse.py [--streams 300] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import time

from harness.measure.stream import StreamParser
from harness.endpoints.chat import ChatAnswer, chat_parser
from harness.load.socket_client import Head, body_lines, read_head, read_stream

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
WORDS = ["The", " weights", " so", " a", " second", " person", " of", " tokens"]


def writes(tokens: int = 128) -> list[bytes]:
    """The server's writes: the headers, then one chunk per event."""
    base = {"id": "chatcmpl-00000001c720bc", "object": "chat.completion.chunk", "created": 1796487913}
    base["model"] = "ruler"

    def event(delta: dict, finish=None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        data = b"data: " + json.dumps({**base, "choices": [choice]}, separators=(",", ":")).encode()
        return b"%x\r\n%s\n\n\r\n" % (len(data) + 2, data)

    out = [HEAD, event({"role": "assistant", "content": ""})]
    out += [event({"content": WORDS[i % len(WORDS)]}) for i in range(tokens)]
    out += [event({}, "length"), b"e\r\ndata: [DONE]\n\n\r\n", b"0\r\n\r\n"]
    return out


class GeneralAnswer(ChatAnswer):
    def _choice(self, choice, t):
        self.choice(choice, t)


class GeneralParser(StreamParser):
    def feed(self, line, t):
        self.line(line, t)


def general_read_stream(reads, head, first, parser) -> None:
    for line, read, _n in body_lines(reads, head, first):
        parser.feed(line, read[1])
        if parser.s.saw_done:
            break


def one(pieces: list[bytes], general: bool) -> int:
    reads = iter([(p, 1.0, True, 1e-4, 1e-4) for p in pieces])
    head, parser = Head(), GeneralParser(GeneralAnswer(0.0)) if general else chat_parser(0.0)
    first = read_head(reads, head)
    (general_read_stream if general else read_stream)(reads, head, first, parser)
    return len(parser.finish(2.0).token_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=300, help="streams read per timing")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    pieces = writes()
    for name, general in (("fast path", False), ("general path", True)):
        best = float("inf")
        for _ in range(args.repeat):
            t0, tokens = time.process_time(), 0
            for _ in range(args.streams):
                tokens += one(pieces, general)
            best = min(best, (time.process_time() - t0) / tokens)
        print(f"{name}: {best * 1e6:.2f} µs of CPU per token (best of {args.repeat})")


if __name__ == "__main__":
    main()
