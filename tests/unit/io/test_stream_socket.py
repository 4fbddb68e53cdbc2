"""Our own streamed request: departure and arrival timed exactly, merged reads bounded honestly.

A one-shot server in a real thread sends what each test scripts; the client side runs on gevent
sockets (no monkey-patching needed) and sleeps where a busy client would be busy elsewhere."""

from __future__ import annotations

import socket
import sys
import threading
import time

import pytest

from harness.core.stream import StreamParser
from harness.io.stream_socket import Head, Pool, Stale, read_head, read_stream

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_TIMESTAMPNS is Linux's")

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(event: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(event), event)


def token(text: str) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n' % text.encode()


END = (
    chunk(b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n')
    + chunk(b"data: [DONE]\n\n")
    + b"0\r\n\r\n"
)


def serve(script) -> tuple[int, dict]:
    """Start a server that reads one request, then runs ``script(conn, seen)``."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    seen: dict = {}

    def run():
        conn, _ = srv.accept()
        with conn:
            seen["request"] = conn.recv(65536)
            seen["received"] = time.perf_counter()
            script(conn, seen)
        srv.close()

    threading.Thread(target=run, daemon=True).start()
    return srv.getsockname()[1], seen


def request(port: int, busy_s: float = 0.0):
    """Send one request on a fresh connection; sleep ``busy_s`` (a busy client) before reading."""
    pool = Pool(f"http://127.0.0.1:{port}", connect_timeout=5)
    parser = StreamParser(time.perf_counter())
    conn = pool.acquire()
    time.sleep(0.05)  # the kernel turns receive stamping on a moment after the first socket asks
    parser.s.t_sent, parser.s.t_written = conn.send(
        pool.request_bytes("/v1/chat/completions", b"{}", {"Accept": "text/event-stream"})
    )
    time.sleep(busy_s)
    t_read = time.perf_counter()
    reads = conn.reads(idle_s=5)
    head = Head()
    first = read_head(reads, head)
    read_stream(reads, head, first, parser)
    conn.close()
    return parser.finish(time.perf_counter()), t_read


def test_the_request_is_timed_from_its_departure_and_sent_whole():
    def script(conn, seen):
        time.sleep(0.05)
        conn.sendall(HEAD + chunk(token("a")) + chunk(token("b")) + END)

    port, seen = serve(script)
    sample, _ = request(port)
    assert sample.ok and sample.t_sent is not None
    assert sample.t_send <= sample.t_sent <= seen["received"] + 0.001  # left before the server had it
    assert sample.ttft == pytest.approx(sample.t_first - sample.t_sent)
    assert sample.send_delay is not None and sample.send_delay >= 0.05  # the client's own time
    assert seen["request"].startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert b"Content-Length: 2\r\n" in seen["request"] and seen["request"].endswith(b"\r\n\r\n{}")


def test_a_first_token_in_the_headers_packet_is_timed_by_the_kernel_not_the_late_read():
    def script(conn, seen):
        seen["wrote"] = time.perf_counter()
        conn.sendall(HEAD + chunk(token("a")))  # some engines send the headers with the first token
        time.sleep(0.4)
        conn.sendall(END)

    port, seen = serve(script)
    sample, t_read = request(port, busy_s=0.25)
    assert sample.ok and sample.clock == "kernel"
    assert sample.t_first < t_read - 0.15  # its arrival, not when this busy client read it
    assert sample.t_first - seen["wrote"] < 0.05
    assert sample.read_lags[0] >= 0.15  # and how long it waited for the client is known


def test_tokens_merged_by_a_late_read_carry_their_possible_wait_and_count_as_late():
    def script(conn, seen):
        conn.sendall(HEAD)
        for text in "abc":
            conn.sendall(chunk(token(text)))
            time.sleep(0.03)
        conn.sendall(END)

    port, _ = serve(script)
    sample, _ = request(port, busy_s=0.3)  # all three wait in the socket: one read, one stamp
    assert sample.output_tokens is None or sample.output_tokens == 3
    assert sample.merged_tokens == 2 and sample.first_merged
    # the two older tokens may have waited up to the whole busy time: more than a token gap (late)
    assert all(wait >= 0.2 for wait in sample.read_lags)
    assert len(sample.read_lags) == 3


def test_tokens_the_server_wrote_together_are_merged_but_not_late():
    def script(conn, seen):
        conn.sendall(HEAD)
        time.sleep(0.1)
        conn.sendall(chunk(token("a")) + chunk(token("b")))  # one write: one packet, one true time
        time.sleep(0.05)
        conn.sendall(END)

    port, _ = serve(script)
    sample, _ = request(port)  # a prompt reader, waiting on the socket
    assert sample.merged_tokens == 1
    assert max(sample.read_lags) < 0.03  # the bound says the read was in time


def test_a_kept_alive_connection_the_server_closed_is_stale_not_a_failure():
    def script(conn, seen):
        pass  # closes at once without a byte

    port, _ = serve(script)
    pool = Pool(f"http://127.0.0.1:{port}", connect_timeout=5)
    conn = pool.acquire()
    conn.send(pool.request_bytes("/", b"", {}))
    with pytest.raises(Stale):
        read_head(conn.reads(idle_s=5), Head())
    conn.close()


def test_a_stream_cut_mid_body_is_a_cut_not_a_parse_error():
    from harness.io.arrival_stamps import StreamCut

    def script(conn, seen):
        conn.sendall(HEAD + chunk(token("a")))  # and closes without the last chunk

    port, _ = serve(script)
    with pytest.raises(StreamCut):
        request(port)


def test_lines_ended_by_a_bare_carriage_return_are_lines_too():
    def script(conn, seen):
        events = [t.replace(b"\n", b"\r") for t in (token("a"), token("b"))]
        conn.sendall(HEAD + b"".join(chunk(e) for e in events) + END)

    port, _ = serve(script)
    sample, _ = request(port)
    assert sample.ok and sample.text == "ab"


def test_the_single_request_path_reads_bare_carriage_returns_too():
    from harness.io.http import stream_chat

    def script(conn, seen):
        events = [t.replace(b"\n", b"\r") for t in (token("a"), token("b"))]
        conn.sendall(HEAD + b"".join(chunk(e) for e in events) + END)

    port, _ = serve(script)
    sample = stream_chat(f"http://127.0.0.1:{port}/v1", {"messages": []}, timeout=5)
    assert sample.ok and sample.text == "ab" and sample.t_sent is not None


def test_bad_base_urls_are_one_line_errors():
    from harness.errors import ConfigError

    for url in ("ftp://x", "http://[::1", "no-scheme"):
        with pytest.raises(ConfigError):
            Pool(url, connect_timeout=1)
