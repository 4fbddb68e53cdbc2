"""Streamed chat requests on connections of our own, timed at both ends.

The load's requests do not go through an HTTP library, because each library hides the two moments
a TTFT is made of:

* **departure**: the moment just before the request is written to the socket (a stamp taken
  after ``send`` returns could follow the first token's kernel stamp: a negative TTFT). The time
  before it (building the request, waiting for a connection, connecting) is the client's own
  *send delay*, kept apart from the TTFT; the write's own time (microseconds) is in the TTFT;
* **arrival**: every read, the headers' included, is a ``recvmsg`` carrying the kernel's receive
  stamp (``harness.load.arrival_stamps``), so a first token that came in the same packet as the
  headers (some engines send them together) is timed by the kernel too, not by when a busy client
  got round to reading it.

One ``Connection`` is one keep-alive HTTP/1.1 socket; a ``Pool`` keeps a user's idle ones. The
HTTP parsing (status, headers, chunked or close-delimited bodies, interim 1xx answers) is
geventhttpclient's C parser, fed by hand. TLS works the same way, timed at read (the kernel cannot
stamp what it decrypts). Cooperative under gevent: used by the Locust users only.
"""

from __future__ import annotations

import socket
import ssl
import time
from contextlib import suppress
from typing import Iterator

from geventhttpclient.response import HTTPParseError, HTTPResponse

from harness.measure.sse_lines import take_lines
from harness.measure.stream import StreamParser
from harness.load.arrival_stamps import ANC_SIZE, StreamCut, enable, kernel_time
from harness.endpoints.http_client import split_url

READ_SIZE = 65536
MAX_HEAD = 64 * 1024  # bytes of status line and headers (the endpoint proof's 100 headers fit)
MAX_HEADERS = 100  # header fields, as the standard library's http.client allows
MAX_LINE = 4 << 20  # one body line (an SSE event) longer than this is no stream we can measure

# data, arrival, stamped by the kernel, read lag (of the newest packet), and the most the oldest
# byte of the read can have waited for this client (see ``LoopClock``)
Read = tuple[bytes, float, bool, "float | None", float]


class LoopClock:
    """The earliest moment bytes that woke a reader in this turn of the event loop can have come,
    from two watchers libev runs around each poll (prepare just before, check just after).

    A read can return bytes of two packets; the kernel then keeps only the newer packet's stamp,
    so how long the older one waited is not known. It is bounded, though. A poll that blocked was
    woken by the first bytes to come, so what it reports came as it returned; a poll that did not
    block reports bytes that came after the previous poll returned (else that one would have
    reported them). A bound under a token gap means the read was in time and the stamp is near."""

    BLOCKED_S = 5e-5  # a poll longer than this waited for its bytes

    _clocks: dict = {}

    def __init__(self, hub) -> None:
        self.before = self.returned = self.floor = time.perf_counter()
        self._prepare, self._check = hub.loop.prepare(), hub.loop.check()
        self._prepare.start(self._polling)
        self._check.start(self._polled)

    def _polling(self) -> None:
        self.before = time.perf_counter()

    def _polled(self) -> None:
        now = time.perf_counter()
        self.floor = now if now - self.before > self.BLOCKED_S else self.returned
        self.returned = now

    @classmethod
    def of(cls, hub) -> LoopClock:
        clock = cls._clocks.get(id(hub))
        if clock is None:
            clock = cls._clocks[id(hub)] = cls(hub)
        return clock


class Stale(ConnectionError):
    """A kept-alive connection the server had already closed: the request never reached it."""


class HeadTooLarge(ConnectionError):
    """The server's headers passed ``MAX_HEAD`` bytes or ``MAX_HEADERS`` fields."""


class LineTooLong(ConnectionError):
    """One line of the body passed ``MAX_LINE`` bytes without ending."""


class Head(HTTPResponse):
    """The parsed response: status and headers, and the body bytes as they are decoded."""

    def __init__(self, method: str = "POST") -> None:
        super().__init__(method=method)
        self.body = bytearray()
        self.fields = 0  # header fields parsed so far (interim 1xx answers' included)

    def _on_body(self, buf) -> None:
        self.body += buf

    def _flush_header(self) -> None:
        self.fields += 1
        super()._flush_header()

    def header(self, name: str) -> str:
        """A header's value, or ""; a header sent more than once reads as its values joined by
        commas, as HTTP reads list-valued headers (never a list)."""
        value = self.get(name)
        if isinstance(value, list):
            return ", ".join(str(v).strip() for v in value)
        return (value or "").strip()


class Connection:
    """One keep-alive connection to ``host:port`` (TLS when asked, certificates not verified:
    local endpoints often use self-signed ones)."""

    def __init__(self, host: str, port: int, tls: bool, connect_timeout: float) -> None:
        import gevent.socket

        sock = gevent.socket.create_connection((host, port), timeout=connect_timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls:
            import gevent.ssl

            context = gevent.ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            sock = context.wrap_socket(sock, server_hostname=host)
        self.sock = sock
        self.raw = None if tls else getattr(sock, "_sock", None)  # the OS socket under gevent's
        self.kernel = self.raw is not None and enable(sock)
        self.used = 0  # requests sent on it

    def send(self, data: bytes) -> tuple[float, float]:
        """Write the whole request; (departure, written): the departure is stamped just before the
        write, because the first token is stamped by the kernel on arrival and a stamp taken after
        ``sendall`` returns can follow it (the server answered while this client was still leaving
        the system call, or waiting for the CPU): TTFTs came out negative. The write's own time
        (``written`` - departure, microseconds on loopback) is the bias that remains, in the TTFT."""
        t = time.perf_counter()
        self.sock.sendall(data)
        self.used += 1
        return t, time.perf_counter()

    def reads(self, idle_s: float) -> Iterator[Read]:
        """Each read from the socket with its arrival time; ``b""`` once when the server closes.
        ``TimeoutError`` when no byte comes for ``idle_s``. One readiness watcher and one lazily
        re-armed timer per response, not one per read (the per-read hot path of every stream), and
        no speculative read: a read that did not fill the buffer took all there was, so the next
        waits for the socket first (half the system calls, and no exception, per token)."""
        if not self.kernel:
            yield from self._plain_reads(idle_s)
            return
        import gevent

        raw, hub = self.raw, gevent.get_hub()
        assert raw is not None
        clock = LoopClock.of(hub)
        watcher = hub.loop.io(raw.fileno(), 1)
        timer = gevent.Timeout(idle_s)
        timer.start()
        last = since = time.perf_counter()  # the last byte; the earliest the next bytes can have come
        wait = True  # a read that did not fill the buffer took all there was: wait before the next
        try:
            while True:
                if wait:
                    try:
                        hub.wait(watcher)
                        since = max(since, clock.floor)
                    except gevent.Timeout as exc:
                        if exc is not timer:
                            raise
                        quiet = time.perf_counter() - last
                        if quiet >= idle_s:
                            raise TimeoutError(f"no data from the server for {quiet:.0f} s") from None
                        timer.close()
                        timer = gevent.Timeout(idle_s - quiet)
                        timer.start()
                        continue
                try:
                    data, anc, _flags, _addr = raw.recvmsg(READ_SIZE, ANC_SIZE)
                except BlockingIOError:  # woken with nothing to read after all
                    wait = True
                    continue
                wait = len(data) < READ_SIZE
                now_perf = last = time.perf_counter()
                k = kernel_time(anc, now_perf, time.time())
                bound, since = now_perf - since, now_perf
                if k is not None:
                    yield data, k, True, now_perf - k, max(bound, now_perf - k)
                else:
                    yield data, now_perf, False, None, bound
                if not data:
                    return
        finally:
            timer.close()
            watcher.close()

    def _plain_reads(self, idle_s: float) -> Iterator[Read]:
        self.sock.settimeout(idle_s)
        while True:
            try:
                data = self.sock.recv(READ_SIZE)
            except socket.timeout:
                raise TimeoutError(f"no data from the server for {idle_s:.0f} s") from None
            yield data, time.perf_counter(), False, None, 0.0
            if not data:
                return

    def close(self) -> None:
        with suppress(OSError):
            self.sock.close()


class Pool:
    """A user's connections to one server: an idle one is reused, else a new one is opened."""

    def __init__(self, base_url: str, connect_timeout: float) -> None:
        parts, host, port = split_url(base_url)
        self.tls = parts.scheme == "https"
        self.host, self.port = host, port or (443 if self.tls else 80)
        self.netloc = parts.netloc.rsplit("@", 1)[-1]
        self.prefix = parts.path.rstrip("/")  # a base URL's own path goes before every request path
        self.connect_timeout = connect_timeout
        self.idle: list[Connection] = []

    def acquire(self) -> Connection:
        return (
            self.idle.pop() if self.idle else Connection(self.host, self.port, self.tls, self.connect_timeout)
        )

    def release(self, conn: Connection, reusable: bool) -> None:
        if reusable:
            self.idle.append(conn)
        else:
            conn.close()

    def close(self) -> None:
        while self.idle:
            self.idle.pop().close()

    def request_bytes(self, path: str, body: bytes, headers: dict) -> bytes:
        head = [f"POST {self.prefix}{path} HTTP/1.1", f"Host: {self.netloc}", "User-Agent: llm-harness"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        head.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def read_head(reads: Iterator[Read], head: Head) -> Read:
    """Feed reads to ``head`` until a final (non-1xx) status and its headers are in; the read that
    completed them. ``Stale`` when the server closed before sending a byte, ``StreamCut`` when it
    closed within the headers."""
    got = 0
    for read in reads:
        data = read[0]
        if not data:
            raise (StreamCut("the server closed the connection within the headers") if got else Stale())
        got += len(data)
        head.feed(data)
        if head.headers_complete and head.get_code() >= 200:
            return read
        if got > MAX_HEAD or head.fields > MAX_HEADERS:
            raise HeadTooLarge(
                f"the server's headers passed {MAX_HEAD // 1024} KiB or {MAX_HEADERS} fields; "
                "the answer was not read"
            )
    raise Stale()  # the reads ended without a close: cannot happen, but never loop on it


def body_lines(reads: Iterator[Read], head: Head, first: Read) -> Iterator[tuple[bytes, Read, int]]:
    """Each line of the body (its ending kept: ``\\n``, ``\\r\\n`` or a bare ``\\r``, as the SSE
    rules allow) with the read that completed it and that read's number (lines of one read share
    its time); the bytes that came with the headers carry that read's time."""
    read, n = first, 0
    buf = head.body
    while True:
        cut = buf.find(b"\n")
        cr = buf.find(b"\r", 0, cut if cut >= 0 else len(buf))
        if cr >= 0 and cr + 1 < len(buf) and buf[cr + 1] != 0x0A:
            cut = cr  # a bare \r ends a line too (the SSE rules); \r\n ends at its \n
        if cut >= 0:
            line = bytes(buf[: cut + 1])
            del buf[: cut + 1]
            yield line, read, n
            continue
        if len(buf) > MAX_LINE:
            raise LineTooLong(f"a line of the stream passed {MAX_LINE >> 20} MiB without ending")
        if head.message_complete:
            if buf:
                line = bytes(buf)
                del buf[:]
                yield line, read, n
            return
        read = next(reads, (b"", time.perf_counter(), False, None, 0.0))
        data, n = read[0], n + 1
        try:
            head.feed(data)  # b"": the peer closed, which ends a close-delimited body
        except HTTPParseError:
            if data:
                raise
            head.message_complete = False
        if not data and not head.message_complete:
            raise StreamCut("the server closed the connection mid-response")


def whole_body(reads: Iterator[Read], head: Head, limit: int) -> bytes:
    """The rest of a (non-stream) body, up to ``limit`` bytes."""
    while not head.message_complete and len(head.body) < limit:
        data = next(reads, (b"",))[0]
        head.feed(data)
        if not data:
            break
    return bytes(head.body[:limit])


def body_reads(reads: Iterator[Read], head: Head, first: Read) -> Iterator[tuple[list[bytes], Read, int]]:
    """``body_lines`` a read at a time: the lines each read completed (the bytes that came with the
    headers carry that read), the read and its number. The same lines, times and errors."""
    read, n = first, 0
    buf = head.body
    while True:
        lines = take_lines(buf)
        if lines:
            yield lines, read, n
        if len(buf) > MAX_LINE:
            raise LineTooLong(f"a line of the stream passed {MAX_LINE >> 20} MiB without ending")
        if head.message_complete:
            if buf:
                line = bytes(buf)
                del buf[:]
                yield [line], read, n
            return
        read = next(reads, (b"", time.perf_counter(), False, None, 0.0))
        data, n = read[0], n + 1
        try:
            head.feed(data)  # b"": the peer closed, which ends a close-delimited body
        except HTTPParseError:
            if data:
                raise
            head.message_complete = False
        if not data and not head.message_complete:
            raise StreamCut("the server closed the connection mid-response")


def read_stream(reads: Iterator[Read], head: Head, first: Read, parser: StreamParser) -> int:
    """Feed the body's lines to ``parser``, each with the arrival of the read that brought it (the
    kernel's stamp where it gives one), and keep per stamped token how long it waited in the socket
    for this client. A token followed by another in the same read is *merged*: the kernel kept only
    the newer packet's stamp, so its own wait is not known and the most it can have been is kept
    instead (``LoopClock``); under a token gap, the read was in time and the stamp near enough.
    The body's size in bytes."""
    s = parser.s
    stamped, tokens, size = False, s.token_times, 0
    last_n, last_wait = -1, None  # the read that brought the latest token, and that token's wait
    feed, lags = parser.feed, s.read_lags
    for lines, read, n in body_reads(reads, head, first):  # the hot path: a read's lines at once
        t, lag, kernel = read[1], read[3], read[2]
        for line in lines:
            size += len(line)
            before = len(tokens)
            feed(line, t)
            if s.saw_done:  # the stream's true end, even on a connection the server holds open
                break
            stamped = stamped or kernel
            if len(tokens) == before or lag is None:
                continue
            if n == last_n:  # the previous token came in this read too: merged, its wait bounded
                s.merged_tokens += 1
                s.first_merged = s.first_merged or before == 1
                last_wait = read[4]
            if last_wait is not None:
                lags.append(last_wait)
            last_n, last_wait = n, lag
        if s.saw_done:
            break
    if last_wait is not None:
        s.read_lags.append(last_wait)
    s.clock = "kernel" if stamped else "read"
    return size
