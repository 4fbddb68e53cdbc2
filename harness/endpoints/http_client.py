"""The one OpenAI-style HTTP helper: every request a command sends to a server under test goes
through here, under its two bounds (``harness.bounds.Bounds``): the whole request
(``total_s``, enforced by a watchdog that shuts the socket down) and each gap without a byte
(``idle_s``, the socket's timeout, the wait for the headers included). So a server that never
sends headers, or trickles a byte at a time, ends at the stated bound with a reason.

The URL and headers of a request are built here once (``chat_url``, ``chat_headers``), for the
endpoint proof and the load alike, for any endpoint kind (``harness.endpoints``). Streams are
read line by line as they arrive (chunked or close-delimited), never in fixed blocks.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Iterator
from urllib.parse import SplitResult, urlsplit

from harness.bounds import Bounds
from harness.safe_text import REDACTED, keep_secret, safe_text
from harness.measure.sample import Sample
from harness.endpoints.wire import MODELS
from harness.measure.sse_lines import LineSplitter
from harness.measure.stream import StreamParser, error_message, whole_body_error
from harness.endpoints import body_of, kind_named
from harness.errors import ConfigError, TargetError, TargetTimeout, TargetUnreachable

MAX_BODY = 4 << 20  # a whole (non-streamed) answer larger than this is cut here
MAX_LINE = 4 << 20  # one line of a stream longer than this ends the request
# What reading a broken answer raises in ``http.client``: the socket's and the parser's errors, and
# ValueError or OverflowError from a chunk size that is negative or absurd (``read(-10)``).
READ_ERRORS = (OSError, http.client.HTTPException, ValueError, OverflowError)


def chat_url(base_url: str, endpoint: str | None = None) -> str:
    """The URL of an endpoint kind (None: streamed chat, ``/chat/completions``) under an
    OpenAI-style base URL (``.../v1``; ``/v1`` when the base URL has no path), the same for the
    proof, the load and the probes."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/") or "/v1"
    return f"{parts.scheme}://{parts.netloc}{path}{kind_named(endpoint).path}"


def auth_headers(api_key: str | None) -> dict[str, str]:
    """The bearer header for an API key, or none; the key itself is never logged or recorded. A
    key with a character no header carries as sent (a control character, a line break, anything
    past ASCII) is refused: it would be sent mangled, or end the header early."""
    keep_secret(api_key)  # whatever a server echoes of it is redacted (harness.safe_text)
    if api_key and not all(" " <= c <= "~" for c in api_key):
        raise ConfigError(
            "the API key holds a control character, a line break or a character past ASCII, which "
            "no HTTP header carries as it is; check the variable --api-key-env names"
        )
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def chat_headers(api_key: str | None = None, extra: dict | None = None) -> dict:
    """Headers of every chat request: JSON in, an uncompressed event stream out, the key if any."""
    h = {"Content-Type": "application/json", "Accept": "text/event-stream", "Accept-Encoding": "identity"}
    return {**h, **auth_headers(api_key), **(extra or {})}


def stream_problem(status: int, encoding: str) -> str | None:
    """Why a 200 response cannot be read as an event stream (compressed), or None. ``encoding`` is
    the Content-Encoding header as sent (a header sent twice: its values joined by commas)."""
    codings = [c.strip().lower() for c in (encoding or "").split(",")]
    worn = [c for c in codings if c not in ("identity", "")]
    if status == 200 and worn:
        shown = safe_text(", ".join(worn), 60)
        return f"Compressed: the server sent Content-Encoding {shown} although asked for identity"
    return None


def all_values(headers, name: str) -> str:
    """A header of an ``http.client`` response, every copy of it joined by commas ("" when absent)."""
    return ", ".join(headers.get_all(name) or [])


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict
    body: bytes

    def json(self):
        """The body as JSON; ValueError for one that is not, nested too deep to parse included."""
        try:
            return json.loads(self.body)
        except RecursionError:
            raise ValueError("the reply's JSON is nested too deeply to parse") from None

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class _Watchdog:
    """Shuts the socket down when the total bound passes, so a blocked read returns at once.
    Under gevent (the sweep's process) its timer is a greenlet, which never runs while a flood
    keeps every read returning at once: readers that loop also ask ``expired``, the clock's word."""

    def __init__(self, seconds: float) -> None:
        self.fired = False
        self.deadline = time.monotonic() + seconds
        self.sock: socket.socket | None = None
        self.sent: float | None = None  # the departure: just before the request was written
        self.written: float | None = None  # when the write returned
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        if self.sock is not None:
            with suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)

    def expired(self) -> bool:
        """Whether the total bound has passed (fired, or past its deadline; then it fires)."""
        if not self.fired and time.monotonic() >= self.deadline:
            self._fire()
        return self.fired

    def cancel(self) -> None:
        self._timer.cancel()


def split_url(url: str) -> tuple[SplitResult, str, int | None]:
    """An http(s) URL's parts, host and port (None: the scheme's); ConfigError, one line, for any
    other (the load's own connections read URLs the same way)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise ConfigError(f"not a usable URL: {url!r} ({exc})") from None
    if parts.scheme not in ("http", "https") or not host:
        raise ConfigError(f"not an http(s) URL: {url!r}; give one like http://127.0.0.1:8000/v1")
    return parts, host, port


def check_base_url(url: str, flag: str = "--base-url") -> None:
    """Refuse, in one line, a base URL whose parts would not reach every request or would leak:
    a ``user:password@`` (never sent as credentials, and it would be written into records and
    printed; the message never repeats it) and a query string (the requests are built from the
    URL's path, so it would be dropped silently)."""
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError:
        raise ConfigError(f"{flag} is not a usable URL; give one like http://127.0.0.1:8000/v1") from None
    if "@" in parts.netloc:
        shown = f"{parts.scheme}://{REDACTED}@{parts.netloc.rsplit('@', 1)[-1]}{parts.path}"
        raise ConfigError(
            f"{flag} {shown} carries a user name or password; it is not sent as credentials and "
            "would be written into records: remove it and pass a key with --api-key-env NAME"
        )
    if parts.query or parts.fragment or url.rstrip().endswith(("?", "#")):
        raise ConfigError(
            f"{flag} {safe_text(url.split('?')[0].split('#')[0], 200)} carries a query string or "
            "fragment, which would not reach every request; give the URL without it"
        )


class _Response(http.client.HTTPResponse):
    """``http.client``'s response, reading past interim answers (``103 Early Hints`` and the like)
    to the final status, as the standard library does only for ``100 Continue``."""

    def _read_status(self):
        while True:
            version, status, reason = super()._read_status()
            if status in (100, 101) or not 100 <= status < 200:
                return version, status, reason
            http.client._read_headers(self.fp)  # type: ignore[attr-defined]  # the interim headers


def _connection(url: str, idle_s: float, verify: bool) -> tuple[http.client.HTTPConnection, str]:
    parts, host, port = split_url(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        context = ssl.create_default_context() if verify else ssl._create_unverified_context()
        conn = http.client.HTTPSConnection(host, port, timeout=idle_s, context=context)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=idle_s)
    conn.response_class = _Response
    return conn, target


class TotalBoundPassed(TimeoutError):
    """The watchdog ended a request before its headers were read."""


@contextmanager
def opened(
    method: str, url: str, bounds: Bounds, body: bytes | None = None, headers=None, verify: bool = True
) -> Iterator[tuple[http.client.HTTPResponse, _Watchdog]]:
    """Send one request and yield its response (headers read) under both bounds. Errors are the
    standard library's (``OSError``, ``http.client.HTTPException``); ``watchdog.fired`` says the
    total bound ended it."""
    conn, target = _connection(url, bounds.idle_s, verify)
    dog = _Watchdog(bounds.total_s)
    try:
        try:
            conn.connect()
            dog.sock = conn.sock
            if dog.fired:
                raise TimeoutError("the total bound passed while connecting")
            # stamped before the write, as the load's own client does: a stamp taken after it
            # returns can follow the answer (the server replied while this client left the call)
            dog.sent = time.perf_counter()
            conn.request(method, target, body=body, headers=headers or {})
            dog.written = time.perf_counter()
            resp = conn.getresponse()
        except READ_ERRORS as exc:
            if dog.fired:  # headers never finished: the shutdown reads as a closed or garbled answer
                raise TotalBoundPassed(f"the total bound passed before the headers ({exc!r})") from exc
            raise
        yield resp, dog
    finally:
        dog.cancel()
        conn.close()


def failure(exc: BaseException, bounds: Bounds, fired: bool) -> str:
    """One line for what ended a request early."""
    if fired or isinstance(exc, TotalBoundPassed):
        return f"Timeout: the request passed its total bound of {bounds.total_s:g} s"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return f"Timeout: no byte from the server for {bounds.idle_s:g} s (the idle bound)"
    if isinstance(exc, http.client.IncompleteRead):
        return "StreamCut: the server closed the connection mid-response"
    if isinstance(exc, (ValueError, OverflowError)):
        return f"BadFraming: the response's chunked framing is broken ({safe_text(exc, 120)})"
    text = safe_text(exc, 160)
    return f"{type(exc).__name__}: {text or 'connection lost'}"


def request(
    method: str,
    url: str,
    bounds: Bounds,
    payload=None,
    headers=None,
    verify: bool = True,
    limit: int = MAX_BODY,
) -> Reply:
    """One whole request (JSON ``payload`` if any) under both bounds, its body read up to ``limit``
    bytes. Raises TargetUnreachable when nothing answers, TargetTimeout past a bound, TargetError
    for a broken answer: one line each."""
    hdrs = {"Accept-Encoding": "identity", **(headers or {})}
    body = None
    if payload is not None:
        body, hdrs["Content-Type"] = json.dumps(payload).encode(), "application/json"
    fired = False
    try:
        with opened(method, url, bounds, body, hdrs, verify) as (resp, dog):
            try:
                data = resp.read(limit)
            finally:
                fired = dog.fired
            if fired:  # the watchdog's shutdown reads as the end of the body: never a whole answer
                raise TimeoutError("the total bound passed while reading the body")
            if resp.length and len(data) < limit:  # closed before its Content-Length
                raise http.client.IncompleteRead(data, resp.length)
            return Reply(resp.status, dict(resp.getheaders()), data)
    except ConnectionRefusedError as exc:
        raise TargetUnreachable(f"nothing answers at {url}; start the server or fix --base-url") from exc
    except READ_ERRORS as exc:
        line = failure(exc, bounds, fired)
        kind = TargetTimeout if line.startswith("Timeout") else TargetError
        raise kind(f"{method} {url}: {line}") from exc


def get_models(base_url: str, api_key: str | None, bounds: Bounds, verify: bool = True) -> Reply:
    """``GET {base_url}/models`` with the key, under the bounds (TargetError, one line, on no answer)."""
    return request(
        "GET", base_url.rstrip("/") + "/models", bounds, headers=auth_headers(api_key), verify=verify
    )


def model_ids(reply: Reply) -> list[str]:
    """The ids a ``/models`` answer lists ([] for a non-200 answer or a body that is not the list)."""
    if reply.status != 200:
        return []
    try:
        data = reply.json().get(MODELS.data)
    except (ValueError, AttributeError, RecursionError):
        return []
    if not isinstance(data, list):  # "data": null, a string, ...: no list of models
        return []
    return [
        safe_text(m[MODELS.id], 200)
        for m in data
        if isinstance(m, dict) and isinstance(m.get(MODELS.id), str)
    ]


def stream_chat(
    base_url: str,
    body: dict,
    api_key: str | None = None,
    timeout: float = 60.0,
    headers: dict | None = None,
    verify: bool = True,
    idle_timeout: float | None = None,
    endpoint: str | None = None,
) -> Sample:
    """Send one request of an endpoint kind (None: streamed chat) and return what the client saw.
    ``body`` is chat-shaped (``messages`` and the sampling fields); the kind makes its own of it.
    Never raises for what the server does: every way it can fail ends in the sample's ``error``
    (the server's own message where it sent one). ``timeout`` bounds the whole request,
    ``idle_timeout`` each gap."""
    bounds = Bounds.of(timeout, idle_timeout)
    kind = kind_named(endpoint)
    payload = json.dumps(body_of(kind, body)).encode()
    t_send = time.perf_counter()
    parser = kind.parser(t_send)
    fired = False
    url = chat_url(base_url, endpoint)
    try:
        with opened("POST", url, bounds, payload, chat_headers(api_key, headers), verify) as (resp, dog):
            parser.s.t_sent, parser.s.t_written = dog.sent, dog.written  # the TTFT runs from the departure
            try:
                error = _read_stream(resp, parser, dog, kind.streamed)
            finally:
                fired = dog.fired
        if fired:  # the watchdog's shutdown reads as the end of the stream: say what it was
            error = failure(TimeoutError(), bounds, fired)
        return parser.finish(time.perf_counter(), error)
    except ConfigError:
        raise
    except READ_ERRORS as exc:
        return parser.finish(time.perf_counter(), failure(exc, bounds, fired))


# Complexity allowed: each way an answer is no stream to read, then the read loop, flat.
def _read_stream(  # noqa: C901
    resp: http.client.HTTPResponse, parser: StreamParser, dog: _Watchdog, streamed: bool = True
) -> str | None:
    """Feed the response's lines to ``parser`` as they arrive (``streamed`` False: its whole body
    at its end); the error when it is no answer to read. The watchdog's flag is looked at after
    every read: a server that floods bytes keeps the socket readable after its shutdown, so the
    total bound ends the loop, not the end of the flood."""
    if resp.status != 200:
        data = resp.read(MAX_BODY)
        try:
            message = error_message(json.loads(data))
        except (ValueError, RecursionError):  # not JSON, or nested too deeply to parse
            message = safe_text(data[:200])
        return f"HTTP {resp.status}: {message or '(empty body)'}"
    problem = stream_problem(resp.status, all_values(resp.headers, "Content-Encoding"))
    if problem:
        return problem
    if not streamed:
        data = resp.read(MAX_BODY)
        if not dog.fired:
            parser.feed_body(data, time.perf_counter())
        return None
    ctype = all_values(resp.headers, "Content-Type").lower()
    if "text/event-stream" not in ctype and ctype:
        return whole_body_error(ctype, resp.read(MAX_BODY))
    lines = LineSplitter()  # \n, \r\n or a bare \r ends a line, as the SSE rules allow
    while True:
        data = resp.read1(MAX_BODY)  # what has come, without waiting for a block to fill
        t = time.perf_counter()
        for line in lines.feed(data) if data else lines.end():
            parser.feed(line, t)
        if parser.s.saw_done:  # the stream's true end, even on a connection held open
            return None
        if dog.expired():  # the caller words the timeout
            return None
        if lines.pending > MAX_LINE:
            return f"LineTooLong: a line of the stream passed {MAX_LINE >> 20} MiB without ending"
        if not data:
            return None
