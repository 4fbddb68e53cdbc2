"""Small hostile OpenAI-style servers for the fault matrix: plain sockets in threads, one fault each.

``/v1/models`` always answers (so every command gets as far as its chat requests); the chat route
misbehaves as the fault says. Every server binds 127.0.0.1 and stops (with every connection it
holds) when the ``with`` block ends.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import socket
import socketserver
import struct
import threading
import time

MODEL = "fake-model"
SERVER_MESSAGE = "the fake server ran out of KV cache (slot 0)"


def event(obj) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def chunk(text: str | None = None, finish: str | None = None, usage: dict | None = None) -> dict:
    delta = {"content": text} if text else {}
    out = {"id": "fake-1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        out = {"id": "fake-1", "choices": [], "usage": usage}
    return out


def good_events(tokens: int = 4) -> list[bytes]:
    body = [event(chunk(f"t{i} ")) for i in range(tokens)]
    body.append(event(chunk(finish="length")))
    body.append(
        event(chunk(usage={"prompt_tokens": 7, "completion_tokens": tokens, "total_tokens": 7 + tokens}))
    )
    body.append(b"data: [DONE]\n\n")
    return body


FAULTS = (
    "ok",
    "no-headers",
    "trickle",
    "midstream-error",
    "json-error-200",
    "not-streamed",
    "http10-stream",
    "reset",
    "garbage",
    "multiline-sse",
    "http-500",
    "gzip",
    "trickle-headers",
    "short-body",
    # one fake server per class of fault (docs/failures.md)
    "endless-headers",
    "after-done",
    "held-open",
    "done-first",
    "huge-usage",
    "usage-lie",
    "surrogate-error",
    "surrogate-sse",
    "dup-headers",
    "early-hints",
    "models-null",
    "nan-metrics",
    "big-metrics",
    "echo-key",
    # the second sweep of round two: one fake server per class it found
    "bad-chunk",
    "bad-utf8",
    "choices-dict",
    "delta-flood",
    "echo-key-encoded",
    "key-split-error",
    "key-everywhere",
    # the third sweep
    "burst-flood",
    "odd-metrics",
    "huge-metrics-value",
    "deep-error",
    "cached-over-prompt",
    "empty-204",
    "key-in-path",
    # round three (the new inputs): conversations and agent loops
    "huge-answer",
    "reasoning-only",
    "tool-forever",
    "bad-tool-args",
    "unknown-tool",
    "tool-flood",
    "context-at-turn-3",
)
# A server text with everything a terminal or an encoder chokes on: escape sequences, a bell, a
# lone surrogate (as the JSON escape a server sends) and a carriage return.
NASTY_TEXT = "bad \\u001b[31mred\\u001b[0m \\u0007bell \\ud800 lone \\r\\n end"
# The faults a GET of /health or /metrics meets too (every other fault answers those 200; any
# other GET is answered 404 whatever the fault).
GET_FAULTS = ("no-headers", "trickle", "trickle-headers", "reset", "garbage", "http-500", "short-body")
IDLE_METRICS = "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 0\n"
NAN_METRICS = (  # legal Prometheus: NaN and infinities
    "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing NaN\n"
    "# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred +Inf\n"
    "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total -Inf\n"
)
ODD_METRICS = "# TYPE x unknowntype\nllamacpp:requests_processing 3\n"  # a type the parser refuses
HUGE_METRICS_VALUE = "llamacpp:requests_processing " + "9" * 40 + "\nllamacpp:requests_deferred 1\n"
BIG_METRICS = IDLE_METRICS + "# TYPE pad gauge\n" + "".join(f'pad{{i="{i}"}} 1\n' for i in range(600_000))


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        srv: HostileServer = self.server.owner  # type: ignore[attr-defined]
        sock: socket.socket = self.request
        sock.settimeout(5)
        try:
            head, body = _read_request(sock)
        except OSError:
            return
        received = time.monotonic()
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        srv.requests.append(line)
        if line.startswith("POST"):
            srv.received.append(received)
        for h in head.split(b"\r\n")[1:]:
            if h.lower().startswith(b"authorization:"):
                srv.last_auth = h.split(b":", 1)[1].strip().decode("latin-1")
        if body:
            srv.body_sizes.append(len(body))
            with contextlib.suppress(ValueError):
                srv.bodies.append(json.loads(body))
        if not self._special_get(sock, srv, line):
            self._route(sock, srv, line)

    def _special_get(self, sock, srv, line: str) -> bool:
        """The GETs a fault answers its own way; True when this was one."""
        if line.startswith("GET /props") and srv.fault == "delta-flood":
            with contextlib.suppress(OSError):
                _trickle_json(sock, srv)
            return True
        return False

    def _route(self, sock, srv, line: str) -> None:
        if "/v1/models " in line or line.startswith("GET /models"):  # key-in-path: under any prefix
            if srv.fault == "models-null":
                return _send_json(sock, 200, {"object": "list", "data": None})
            return _send_json(sock, 200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        if line.startswith("GET /metrics") and srv.fault in METRICS_BODIES:
            with contextlib.suppress(OSError):  # the client stops reading a body past its cap
                _send_text(sock, METRICS_BODIES[srv.fault])
            return None
        health = line.startswith(("GET /health", "GET /metrics"))
        if health and srv.fault not in GET_FAULTS:
            if line.startswith("GET /health"):
                return _send_json(sock, 200, {"status": "ok"})
            return _send_text(sock, IDLE_METRICS)
        if line.startswith("GET") and not health:  # any other GET (/props, ...): no such route
            return _send_json(sock, 404, {"error": {"message": "no such route"}})
        try:
            getattr(self, "fault_" + srv.fault.replace("-", "_"))(sock, srv)
        except OSError:
            return  # the client gave up (one of its bounds passed): nothing left to tell it

    # -- the faults ------------------------------------------------------------------------------
    def fault_ok(self, sock, srv) -> None:
        with srv.seats or contextlib.nullcontext():  # with seats, requests beyond them queue
            time.sleep(srv.delay_s)
            _send_stream(sock, good_events(), srv)

    def fault_no_headers(self, sock, srv) -> None:
        srv.stop.wait(srv.hold_s)  # read the request, then say nothing until told to stop

    def fault_trickle(self, sock, srv) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        payload = b": keep-alive comment that never ends a line " * 1000
        for byte in payload:
            if srv.stop.wait(0.2):
                return
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                return

    def fault_trickle_headers(self, sock, srv) -> None:  # the status line never ends (10 minutes)
        for byte in b"HTTP/1.1 200 OK" + b" " * 3000:
            if srv.stop.wait(0.2):
                return
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                return

    def fault_short_body(self, sock, srv) -> None:  # closes before its Content-Length
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{}")

    def fault_midstream_error(self, sock, srv) -> None:
        err = {"code": 500, "message": SERVER_MESSAGE, "type": "server_error"}
        body = [event(chunk("t0 ")), event(chunk("t1 ")), b"error: " + json.dumps(err).encode() + b"\n\n"]
        _send_stream(sock, body, srv)

    def fault_json_error_200(self, sock, srv) -> None:
        _send_json(sock, 200, {"error": {"message": SERVER_MESSAGE, "type": "server_error", "code": 503}})

    def fault_not_streamed(self, sock, srv) -> None:
        msg = {"role": "assistant", "content": "a whole answer at once"}
        answer = {"id": "x", "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}]}
        _send_json(sock, 200, {**answer, "usage": {"prompt_tokens": 5, "completion_tokens": 6}})

    def fault_http10_stream(self, sock, srv) -> None:
        sock.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        time.sleep(srv.ttft_s)
        for piece in good_events():
            sock.sendall(piece)
            time.sleep(0.01)

    def fault_reset(self, sock, srv) -> None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def fault_garbage(self, sock, srv) -> None:
        sock.sendall(b"\x00\xffTHIS IS NOT HTTP AT ALL\r\n\r\n\x01garbage")

    def fault_multiline_sse(self, sock, srv) -> None:
        body = []
        for piece in good_events():
            if piece.startswith(b"data: {"):  # one event over several data: lines, as SSE allows
                text = piece[6:].strip().decode()
                half = text.index(",") + 1
                piece = f"data: {text[:half]}\ndata: {text[half:]}\n\n".encode()
            body.append(piece)
        _send_stream(sock, body, srv)

    def fault_gzip(self, sock, srv) -> None:  # compresses although the client asked for identity
        body = gzip.compress(b"".join(good_events()))
        sock.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
        )

    def fault_http_500(self, sock, srv) -> None:
        _send_json(sock, 500, {"error": {"message": SERVER_MESSAGE}})

    # -- round two ---------------------------------------------------------------------------------
    def fault_endless_headers(self, sock, srv) -> None:  # headers that never end
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n")
        n = 0
        while not srv.stop.is_set():
            n += 1
            sock.sendall(b"X-Pad-%d: %s\r\n" % (n, b"y" * 4000))

    def fault_after_done(self, sock, srv) -> None:  # 40 slow tokens after [DONE]
        late = [event(chunk(f"late{i} ")) for i in range(40)]
        _send_stream(sock, good_events(), srv, after=late, gap_after=0.05)

    def fault_held_open(self, sock, srv) -> None:  # the answer complete, the connection held open
        sock.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        for piece in good_events():
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        srv.stop.wait(srv.hold_s)

    def fault_done_first(self, sock, srv) -> None:  # [DONE] before any token
        _send_stream(sock, [b"data: [DONE]\n\n", *good_events()], srv)

    def fault_huge_usage(self, sock, srv) -> None:  # counts of hundreds of digits
        big = 10**300
        usage = b'{"prompt_tokens": %d, "completion_tokens": %d}' % (big, big)
        body = good_events()
        body[-2] = b'data: {"id": "fake-1", "choices": [], "usage": %s}\n\n' % usage
        _send_stream(sock, body, srv)

    def fault_usage_lie(self, sock, srv) -> None:  # 50 deltas, usage says 1
        body = [event(chunk(f"w{i} ")) for i in range(50)] + [event(chunk(finish="stop"))]
        body += [event(chunk(usage={"prompt_tokens": 7, "completion_tokens": 1})), b"data: [DONE]\n\n"]
        _send_stream(sock, body, srv)

    def fault_surrogate_error(self, sock, srv) -> None:  # an error body no terminal or encoder likes
        body = ('{"error": {"message": "%s"}, "id": "\\ud83d"}' % NASTY_TEXT).encode()
        sock.sendall(
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
        )

    def fault_surrogate_sse(self, sock, srv) -> None:  # the same text as an SSE error event
        line = ('data: {"id": "\\udcff", "error": {"message": "%s"}}\n\n' % NASTY_TEXT).encode()
        _send_stream(sock, [event(chunk("t0 ")), line], srv)

    def fault_dup_headers(self, sock, srv) -> None:  # Content-Type and Content-Encoding twice each
        sock.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Type: text/event-stream\r\n"
            b"Content-Encoding: identity\r\nContent-Encoding: identity\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n"
        )
        for piece in good_events():
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        sock.sendall(b"0\r\n\r\n")

    def fault_early_hints(self, sock, srv) -> None:  # 103 before the answer
        sock.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
        _send_stream(sock, good_events(), srv)

    def fault_models_null(self, sock, srv) -> None:
        _send_stream(sock, good_events(), srv)

    fault_nan_metrics = fault_big_metrics = fault_models_null

    def fault_echo_key(self, sock, srv) -> None:  # echoes the Authorization header it was sent
        auth = srv.last_auth or "(none)"
        _send_json(sock, 401, {"error": {"message": f"invalid credentials in 'Authorization: {auth}'"}})

    # -- round two, the second sweep -----------------------------------------------------------------
    def fault_bad_chunk(self, sock, srv) -> None:  # a negative chunk size, then one that is no number
        kind = b"text/event-stream" if _streamed(srv) else b"application/json"
        sock.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n" % kind
        )
        piece = event(chunk("t0 ")) if _streamed(srv) else b'{"choices": ['
        sock.sendall(b"%x\r\n%s\r\n-10\r\n%s\r\nzz\r\n%s\r\n0\r\n\r\n" % (len(piece), piece, piece, piece))

    def fault_bad_utf8(self, sock, srv) -> None:  # bytes that are not UTF-8 inside a data line
        bad = b'data: {"id": "x\xff\xfe", "choices": [{"index": 0, "delta": {"content": "t\xc3("}}]}\n\n'
        if _streamed(srv):
            return _send_stream(sock, [event(chunk("t0 ")), bad, *good_events()], srv)
        body = b'{"id": "x", "choices": [{"index": 0, "message": {"content": "\xff\xfe"}}]}'
        return _send_raw(sock, 200, body)

    def fault_choices_dict(self, sock, srv) -> None:  # "choices" as an object, not a list
        if _streamed(srv):
            bad = event({"id": "x", "choices": {"0": {"delta": {"content": "t0 "}, "finish_reason": None}}})
            return _send_stream(sock, [bad, *good_events()], srv)
        return _send_json(sock, 200, {"id": "x", "choices": {"0": {"message": {"content": "hi"}}}})

    def fault_delta_flood(self, sock, srv) -> None:  # deltas as fast as the socket takes them, endless
        sock.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n"
        )
        block = b"".join([event(chunk("x"))] * 1000)
        while not srv.stop.is_set():  # (its /props trickles an answer that never ends)
            sock.sendall(b"%x\r\n%s\r\n" % (len(block), block))

    def fault_burst_flood(self, sock, srv) -> None:  # 1,500 deltas in three writes 5 ms apart, a true end
        flood = [b"".join([event(chunk("x"))] * 500)] * 3 + [event(chunk(finish="length"))]
        usage = {"prompt_tokens": 7, "completion_tokens": 1500, "total_tokens": 1507}
        _send_stream(sock, [*flood, event(chunk(usage=usage)), b"data: [DONE]\n\n"], srv)

    def fault_odd_metrics(self, sock, srv) -> None:  # the chat answers; /metrics is the fault
        _send_stream(sock, good_events(), srv)

    fault_huge_metrics_value = fault_key_in_path = fault_odd_metrics

    def fault_deep_error(self, sock, srv) -> None:  # a 500 whose JSON is nested past any parser
        _send_raw(sock, 500, b'{"error": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")

    def fault_cached_over_prompt(self, sock, srv) -> None:  # more tokens cached than the prompt has
        usage = {"prompt_tokens": 5, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 9000}}
        _send_stream(sock, [*good_events()[:-2], event(chunk(usage=usage)), b"data: [DONE]\n\n"], srv)

    def fault_empty_204(self, sock, srv) -> None:
        sock.sendall(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")

    def fault_echo_key_encoded(self, sock, srv) -> None:  # the key echoed base64- and hex-encoded
        key = _key(srv).encode()
        said = f"bad token b64={base64.b64encode(key).decode()} hex={key.hex()} HEX={key.hex().upper()}"
        said += f" auth={base64.b64encode(b'Authorization: Bearer ' + key).decode()}"
        _send_json(sock, 401, {"error": {"message": said, "code": "invalid_key"}})

    def fault_key_split_error(self, sock, srv) -> None:  # the key split over an error's message and code
        key = _key(srv)
        half = len(key) // 2
        err = {"error": {"message": f"rejected {key[:half]}", "code": key[half:], "type": key[half:]}}
        line = b"data: " + json.dumps(err).encode() + b"\n\n"
        _send_stream(sock, [event(chunk("t0 ")), line], srv)

    def fault_key_everywhere(self, sock, srv) -> None:  # the key in every field a reply carries
        key = _key(srv)
        half = len(key) // 2
        args = json.dumps({"city": key, "note": key[:half]})
        call = {"index": 0, "id": "c1", "type": "function", "function": {"name": key, "arguments": args}}
        if _streamed(srv):
            body = [event(chunk(key[:half])), event(chunk(key[half:]))]
            body.append(event({"id": "x", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
            body += [event(chunk(finish=key)), b"data: [DONE]\n\n"]
            return _send_stream(sock, body, srv)
        message = {"role": "assistant", "content": key, "tool_calls": [call]}
        choice = {"index": 0, "message": message, "finish_reason": key}
        return _send_json(sock, 200, {"id": key, "model": key, "choices": [choice]})

    # -- round three (the new inputs) ----------------------------------------------------------------
    def fault_huge_answer(self, sock, srv) -> None:  # 5 MB of content every answer, in 80 deltas
        piece = event(chunk("x" * 65_536))
        usage = {"prompt_tokens": 7, "completion_tokens": 80, "total_tokens": 87}
        body = [piece] * 80 + [event(chunk(finish="stop")), event(chunk(usage=usage)), b"data: [DONE]\n\n"]
        _send_stream(sock, body, srv, gap=0.0)

    def fault_reasoning_only(self, sock, srv) -> None:  # it thinks, and never says a word of content
        body = [event(_delta({"reasoning_content": f"hmm{i} "})) for i in range(4)]
        _send_stream(sock, [*body, *good_events(0)], srv)

    def fault_tool_forever(self, sock, srv) -> None:  # every answer one more tool call, never text
        self._tools(sock, srv, [("gauge_read", '{"target": "kv"}')])

    def fault_bad_tool_args(self, sock, srv) -> None:  # arguments that are no JSON object
        self._tools(sock, srv, [("gauge_read", '{"target": "k'), ("gauge_read", "[1, 2]")])

    def fault_unknown_tool(self, sock, srv) -> None:  # a function the request never offered
        self._tools(sock, srv, [("rm_rf_root", "{}")])

    def fault_tool_flood(self, sock, srv) -> None:  # 3,000 calls in one answer
        self._tools(sock, srv, [("gauge_read", "{}")] * 3000)

    def fault_context_at_turn_3(self, sock, srv) -> None:  # llama-server's 400 from the third turn on
        messages = (srv.bodies[-1] if srv.bodies else {}).get("messages") or []
        if sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "user") < 3:
            return _send_stream(sock, good_events(), srv)
        refusal = "the request exceeds the available context size, try increasing it"
        return _send_json(
            sock, 400, {"error": {"code": 400, "message": refusal, "type": "exceed_context_size_error"}}
        )

    def _tools(self, sock, srv, calls: list[tuple[str, str]]) -> None:
        deltas = [
            _delta({"tool_calls": [{"index": i, "id": f"c{i}", "type": "function",
                                    "function": {"name": name, "arguments": args}}]})
            for i, (name, args) in enumerate(calls)
        ]  # fmt: skip
        usage = {"prompt_tokens": 7, "completion_tokens": len(calls), "total_tokens": 7 + len(calls)}
        body = [event(d) for d in deltas] + [event(chunk(finish="tool_calls")), event(chunk(usage=usage))]
        _send_stream(sock, [*body, b"data: [DONE]\n\n"], srv, gap=0.0)


def _delta(delta: dict) -> dict:
    return {"id": "fake-1", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}


METRICS_BODIES = {
    "nan-metrics": NAN_METRICS,
    "big-metrics": BIG_METRICS,
    "odd-metrics": ODD_METRICS,
    "huge-metrics-value": HUGE_METRICS_VALUE,
}


def _streamed(srv) -> bool:
    return bool(srv.bodies) and bool(srv.bodies[-1].get("stream"))


def _key(srv) -> str:
    return (srv.last_auth or "Bearer none").split(" ", 1)[-1]


def _trickle_json(sock, srv) -> None:
    """A JSON answer whose body comes a few bytes at a time and never ends."""
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{")
    while not srv.stop.wait(0.01):
        sock.sendall(b" " * 64)


def _send_raw(sock, status: int, body: bytes) -> None:
    sock.sendall(
        b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
        b"Connection: close\r\n\r\n%s" % (status, len(body), body)
    )


def _read_request(sock) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        got = sock.recv(65536)
        if not got:
            raise OSError("closed")
        data += got
    head, rest = data.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        got = sock.recv(65536)
        if not got:
            break
        rest += got
    return head, rest


def _send_json(sock, status: int, obj) -> None:
    body = json.dumps(obj).encode()
    reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error"}.get(status, "X")
    sock.sendall(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n".encode()
        + body
    )


def _send_text(sock, text: str) -> None:
    body = text.encode()
    sock.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: %d\r\n"
        b"Connection: close\r\n\r\n%s" % (len(body), body)
    )


def _send_stream(
    sock, pieces: list[bytes], srv, after: list[bytes] = (), gap_after: float = 0.0, gap: float = 0.005
) -> None:
    sock.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
        b"Connection: close\r\n\r\n"
    )
    time.sleep(srv.ttft_s)
    for piece in pieces:
        sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        time.sleep(gap)
    for piece in after:  # what a server sends after the stream's end
        time.sleep(gap_after)
        sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
    sock.sendall(b"0\r\n\r\n")


class _TCP(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class HostileServer:
    """``with HostileServer("trickle") as srv: srv.base_url``."""

    def __init__(
        self, fault: str, delay_s: float = 0.0, ttft_s: float = 0.0, hold_s: float = 600.0, seats: int = 0
    ) -> None:
        # hold_s: how long no-headers and held-open hold a request (until the ``with`` block ends, at
        # the latest). Ten minutes, far past any test's deadline on a command (deadlines.py): a
        # client that ignores its bounds is a hang there, never a slow pass.
        assert fault in FAULTS, fault
        self.fault, self.delay_s, self.ttft_s, self.hold_s = fault, delay_s, ttft_s, hold_s
        self.seats = threading.Semaphore(seats) if seats else None  # "ok": this many served at once
        self.stop = threading.Event()
        self.requests: list[str] = []
        self.received: list[float] = []  # when each POST was read whole (time.monotonic, this host's)
        self.bodies: list = []  # the JSON bodies of the requests, as sent
        self.body_sizes: list[int] = []  # the bytes of each request body, in order
        self.last_auth: str | None = None  # the Authorization header last sent (echo-key echoes it)
        self._tcp = _TCP(("127.0.0.1", 0), _Handler)
        self._tcp.owner = self  # type: ignore[attr-defined]
        self.port = self._tcp.server_address[1]
        self.root = f"http://127.0.0.1:{self.port}"
        self.base_url = self.root + "/v1"
        self._thread = threading.Thread(target=self._tcp.serve_forever, kwargs={"poll_interval": 0.05})

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self._tcp.shutdown()
        self._tcp.server_close()
        self._thread.join(5)


# -- round three (the new inputs): servers a capacity search meets -------------------------------
# Appended as a block (faults, their handlers, their constants) so parallel additions merge.
DIE_AFTER = 14  # dies-after: answers this many chat requests, then the whole server is gone
SLOW_WINDOW = (5, 8)  # slow-window: these chat requests (1-based, in order of arrival) are slow
SLOW_S = 1.0  # slow-window: how long each of them waits before its first byte
FAULTS += ("dies-after", "slow-window")


def _fault_dies_after(self, sock, srv) -> None:
    """Answers ``DIE_AFTER`` chat requests well; after the last of them the server stops
    listening (a crash): every later request is refused, or reset if it slipped in first."""
    n = len(srv.received)
    if n > DIE_AFTER:
        return self.fault_reset(sock, srv)
    _send_stream(sock, good_events(), srv)
    if n == DIE_AFTER:
        threading.Thread(target=_die, args=(srv,), daemon=True).start()
    return None


def _die(srv) -> None:
    srv._tcp.shutdown()  # (the ``with`` block's own shutdown later returns at once)
    srv._tcp.server_close()


def _fault_slow_window(self, sock, srv) -> None:
    """Chat requests ``SLOW_WINDOW`` wait ``SLOW_S`` for their first byte, all others none: the
    same load answered fast, then slow, then fast again (a server whose answers contradict)."""
    low, high = SLOW_WINDOW
    if low <= len(srv.received) <= high:
        time.sleep(SLOW_S)
    _send_stream(sock, good_events(), srv)


_Handler.fault_dies_after = _fault_dies_after  # type: ignore[attr-defined]
_Handler.fault_slow_window = _fault_slow_window  # type: ignore[attr-defined]
