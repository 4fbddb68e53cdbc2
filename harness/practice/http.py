"""A small HTTP/1.1 server on asyncio protocols, built for streaming many SSE responses cheaply.

It parses one request at a time per connection (keep-alive, Content-Length bodies), hands a
``Request`` and a ``Responder`` to the application, and lets the application answer at once
(``send``) or stream with chunked transfer encoding (``start_stream``/``chunk``/``end``), or, as
an HTTP/1.0 server such as Python's ``http.server`` does, with a body the close of the connection
ends (``start_stream(close_delimited=True)``: no length, no chunks). A
general framework would cost several times the CPU per event; this server has one job.

Hostile input is bounded before any work: a Content-Length must be plain digits (no sign, no
``6_0``) and at most ``MAX_BODY``, sent once; a chunked request body is refused; a connection holds
at most one request's head and body unread (``MAX_HEADER`` + ``MAX_BODY``), all connections together
at most ``MAX_BUFFERED``; a connection that has not completed a request head within
``header_timeout_s`` of opening (or of its last answer) is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from dataclasses import dataclass
from typing import Callable
from urllib.parse import parse_qs, urlsplit

MAX_HEADER = 64 * 1024
MAX_BODY = 4 * 1024 * 1024  # a chat request past 4 MiB is far past any context the server has
MAX_BUFFERED = 256 * 1024 * 1024  # unread request bytes over all connections
HEADER_TIMEOUT_S = 30.0
_DIGITS = frozenset(b"0123456789")
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


@dataclass
class Request:
    method: str
    path: str
    query: dict
    headers: dict  # lower-case names
    body: bytes

    def json(self):
        """The body as JSON (ValueError for bytes that are not UTF-8 JSON, RecursionError for an
        absurdly deep document)."""
        return json.loads(self.body.decode("utf-8"))


class Responder:
    """One response on one connection. After ``end`` or ``abort`` further calls do nothing."""

    __slots__ = ("_proto", "closed", "_streaming", "_keep_alive", "chunked")

    def __init__(self, proto: "HttpProtocol", keep_alive: bool) -> None:
        self._proto = proto
        self.closed = False
        self._streaming = False
        self._keep_alive = keep_alive
        self.chunked = True  # a stream's framing: chunked, or ended by the close (start_stream)

    def _head(self, status: int, headers: list[tuple[str, str]], version: str = "HTTP/1.1") -> bytes:
        lines = [f"{version} {status} {_REASONS.get(status, 'Status')}"]
        lines += [f"{k}: {v}" for k, v in headers]
        if version == "HTTP/1.1":  # HTTP/1.0 closes after each answer unless told otherwise
            lines.append("Connection: keep-alive" if self._keep_alive else "Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def send(
        self,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        if self.closed:
            return
        hdrs = [("Content-Type", content_type), ("Content-Length", str(len(body))), *(headers or [])]
        self._proto.write(self._head(status, hdrs) + body)
        self._finish()

    def send_json(self, status: int, obj, headers: list[tuple[str, str]] | None = None) -> None:
        self.send(status, json.dumps(obj).encode("utf-8"), headers=headers)

    def start_stream(
        self,
        status: int = 200,
        content_type: str = "text/event-stream",
        headers: list[tuple[str, str]] | None = None,
        close_delimited: bool = False,
    ) -> None:
        """The stream's head. ``close_delimited``: an HTTP/1.0 answer whose body is every byte until
        the server closes the connection (``chunk`` writes the bytes as they are, ``end`` closes)."""
        self.chunked = not close_delimited
        framing = [("Transfer-Encoding", "chunked")] if self.chunked else []
        hdrs = [("Content-Type", content_type), ("Cache-Control", "no-cache"), *framing, *(headers or [])]
        self._streaming = True
        if close_delimited:
            self._keep_alive = False
        self._proto.write(self._head(status, hdrs, "HTTP/1.1" if self.chunked else "HTTP/1.0"))

    def raw_writer(self):
        """The transport's own ``write`` (the caller frames chunks and checks ``closed`` first):
        the streaming hot path, without the Python calls in between."""
        transport = self._proto.transport
        return transport.write if transport is not None else (lambda data: None)

    def chunk(self, data: bytes) -> None:
        if not self.closed:
            self._proto.write(b"%x\r\n%s\r\n" % (len(data), data) if self.chunked else data)

    def end(self) -> None:
        if not self.closed:
            if self.chunked:
                self._proto.write(b"0\r\n\r\n")
            self._finish()  # close-delimited: the close ends the body (keep-alive is off)

    def abort(self) -> None:
        """Drop the connection mid-response (a stream cut off)."""
        if not self.closed:
            self.closed = True
            self._proto.close()

    def _finish(self) -> None:
        self.closed = True
        self._proto.response_done(self._keep_alive)


Handler = Callable[[Request, Responder], None]


class HttpProtocol(asyncio.Protocol):
    buffered = 0  # unread request bytes held by every connection of this process together

    def __init__(self, handler: Handler, header_timeout_s: float = HEADER_TIMEOUT_S) -> None:
        self.handler = handler
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.busy: Responder | None = None
        self.header_timeout_s = header_timeout_s
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._arm()

    def _arm(self) -> None:
        """Close the connection unless a request head is complete within the header timeout."""
        self._disarm()
        if self.transport is not None and self.header_timeout_s > 0:
            self._timer = asyncio.get_running_loop().call_later(self.header_timeout_s, self._timed_out)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        if self.busy is not None:
            return
        if self.buf:
            self._reject(408, f"no complete request within {self.header_timeout_s:g} s")
        else:
            self.close()

    def _hold(self, delta: int) -> None:
        HttpProtocol.buffered += delta

    def connection_lost(self, exc) -> None:
        self._disarm()
        if self.busy is not None:
            self.busy.closed = True
        self._hold(-len(self.buf))
        self.buf.clear()
        self.transport = None

    def write(self, data: bytes) -> None:
        if self.transport is not None:
            self.transport.write(data)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def response_done(self, keep_alive: bool) -> None:
        self.busy = None
        if not keep_alive:
            self.close()
            return
        self._arm()
        if self.buf:
            self._parse()

    def data_received(self, data: bytes) -> None:
        if self.transport is None:
            return
        if len(self.buf) + len(data) > MAX_HEADER + MAX_BODY:
            self._reject(413, "request too large (head and body past their limits)")
            return
        if HttpProtocol.buffered + len(data) > MAX_BUFFERED:
            self._reject(503, "server busy: too many unread request bytes")
            return
        self.buf += data
        self._hold(len(data))
        if self.busy is None:
            self._parse()

    def _take(self, n: int) -> bytes:
        out = bytes(self.buf[:n])
        del self.buf[:n]
        self._hold(-n)
        return out

    # Complexity allowed: the request head's checks, in one flat pass.
    def _parse(self) -> None:  # noqa: C901
        end = self.buf.find(b"\r\n\r\n", 0, MAX_HEADER + 4)
        if end < 0:
            if len(self.buf) > MAX_HEADER:
                self._reject(413, "request headers too large")
            return
        try:
            head = self.buf[:end].decode("latin-1").split("\r\n")
            method, target, version = head[0].split(" ", 2)
            headers: dict[str, str] = {}
            lengths = set()
            for line in head[1:]:
                name, colon, value = line.partition(":")
                if not colon:
                    raise ValueError("a header line without a colon")
                name = name.strip().lower()
                headers[name] = value.strip()
                if name == "content-length":
                    lengths.add(value.strip())
            if len(lengths) > 1:
                raise ValueError("Content-Length sent twice with different values")
            text = headers.get("content-length", "0") or "0"
            if not _DIGITS.issuperset(text.encode()):  # no sign, no "6_0", no spaces
                raise ValueError(f"Content-Length {text[:20]!r} is not a number of bytes")
            if "transfer-encoding" in headers:
                raise ValueError("chunked request bodies are not supported; send a Content-Length")
            length = int(text[:12]) if len(text) <= 12 else MAX_BODY + 1
        except ValueError as exc:
            self._reject(400, f"malformed HTTP request: {exc}")
            return
        if length > MAX_BODY:
            self._reject(413, f"request body too large (the limit is {MAX_BODY >> 20} MiB)")
            return
        if len(self.buf) < end + 4 + length:
            return
        self._disarm()
        self._take(end + 4)
        body = self._take(length)
        parts = urlsplit(target)
        keep_alive = headers.get("connection", "").lower() != "close" and version == "HTTP/1.1"
        responder = Responder(self, keep_alive)
        self.busy = responder
        request = Request(method.upper(), parts.path, parse_qs(parts.query), headers, body)
        try:
            self.handler(request, responder)
        except Exception as exc:  # an application bug must not kill the server
            responder.send_json(
                500, {"error": {"code": 500, "message": f"internal error: {exc!r}", "type": "server_error"}}
            )

    def _reject(self, status: int, message: str) -> None:
        self._disarm()
        responder = Responder(self, keep_alive=False)
        responder.send_json(
            status, {"error": {"code": status, "message": message, "type": "invalid_request_error"}}
        )
        self._hold(-len(self.buf))
        self.buf.clear()
        self.close()


async def serve(
    handler: Handler, host: str, port: int, ssl_context=None, header_timeout_s: float = HEADER_TIMEOUT_S
) -> asyncio.base_events.Server:
    loop = asyncio.get_running_loop()
    return await loop.create_server(
        lambda: HttpProtocol(handler, header_timeout_s),
        host,
        port,
        reuse_address=True,
        backlog=1024,
        ssl=ssl_context,
    )
