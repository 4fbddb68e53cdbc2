"""Our own streamed request: departure and arrival timed exactly, merged reads bounded honestly.

A one-shot server in a real thread sends what each test scripts; the client side runs on gevent
sockets (no monkey-patching needed) and sleeps where a busy client would be busy elsewhere. Where
a test needs bytes waiting in the socket, or not yet sent, the two sides wait for each other
(events), never for a time: on a loaded machine the server's thread may run late by any amount.
So each time asserted is a sleep's lower bound, or a bound far from the failure it catches."""

from __future__ import annotations

import socket
import sys
import threading
import time

import pytest

from harness.endpoints.chat import chat_parser
from harness.load.socket_client import Head, Pool, Stale, read_head, read_stream
from tests.unit.load.kernel_stamps import stamping_on

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_TIMESTAMPNS is Linux's")
WAIT_S = 10.0  # the most one side waits for the other (a loaded machine's thread, never a pass)


@pytest.fixture(autouse=True, scope="module")
def _stamping():
    with stamping_on():
        yield


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
    seen: dict = {"written": threading.Event(), "read": threading.Event()}

    def run():
        conn, _ = srv.accept()
        with conn:
            seen["request"] = conn.recv(65536)
            seen["received"] = time.perf_counter()
            script(conn, seen)
        srv.close()

    threading.Thread(target=run, daemon=True).start()
    return srv.getsockname()[1], seen


def signalling(reads, seen: dict):
    """The reads, telling the server (``seen["read"]``) once the first has been taken."""
    for n, read in enumerate(reads):
        yield read
        if n == 0:  # the client asks for the next read: the first has been taken
            seen["read"].set()


def request(port: int, seen: dict, busy_s: float = 0.0, after_write: bool = False, before_s: float = 0.0):
    """Send one request on a fresh connection, ``before_s`` after the request began (the client's
    own time); then, with ``after_write``, wait until the server has written what it scripted
    first; sleep ``busy_s`` (a busy client) and read."""
    pool = Pool(f"http://127.0.0.1:{port}", connect_timeout=5)
    parser = chat_parser(time.perf_counter())
    conn = pool.acquire()
    time.sleep(before_s)
    parser.s.t_sent, parser.s.t_written = conn.send(
        pool.request_bytes("/v1/chat/completions", b"{}", {"Accept": "text/event-stream"})
    )
    if after_write:
        assert seen["written"].wait(WAIT_S), "the server never wrote"
    time.sleep(busy_s)
    t_read = time.perf_counter()
    reads = signalling(conn.reads(idle_s=5), seen)
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
    sample, _ = request(port, seen, before_s=0.05)
    assert sample.ok and sample.t_sent is not None
    assert sample.t_send <= sample.t_sent <= seen["received"] + 0.001  # left before the server had it
    assert sample.ttft == pytest.approx(sample.t_first - sample.t_sent)
    assert sample.send_delay is not None and sample.send_delay >= 0.05  # the client's own time
    assert seen["request"].startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert b"Content-Length: 2\r\n" in seen["request"] and seen["request"].endswith(b"\r\n\r\n{}")


def test_a_first_token_in_the_headers_packet_is_timed_by_the_kernel_not_the_late_read():
    def script(conn, seen):
        conn.sendall(HEAD + chunk(token("a")))  # some engines send the headers with the first token
        seen["wrote"] = time.perf_counter()
        seen["written"].set()
        seen["read"].wait(WAIT_S)  # the end only after the client read the first packet alone
        conn.sendall(END)

    port, seen = serve(script)
    sample, t_read = request(port, seen, busy_s=0.25, after_write=True)
    assert sample.ok and sample.clock == "kernel"
    # The packet was in the socket 0.25 s at least before the client read it (it waited for the
    # write, then slept): a stamp taken at the read comes that late after the write, the kernel's
    # before the write returned (converting it between clocks can move it earlier, never later).
    assert sample.t_first < t_read - 0.2  # its arrival, not when this busy client read it
    assert sample.t_first - seen["wrote"] < 0.1
    assert sample.read_lags[0] >= 0.2  # and how long it waited for the client is known


def test_tokens_merged_by_a_late_read_carry_their_possible_wait_and_count_as_late():
    def script(conn, seen):
        conn.sendall(HEAD)
        for text in "abc":
            conn.sendall(chunk(token(text)))
            time.sleep(0.03)
        conn.sendall(END)
        seen["written"].set()

    port, seen = serve(script)
    sample, _ = request(port, seen, busy_s=0.3, after_write=True)  # all three wait: one read, one stamp
    assert sample.output_tokens is None or sample.output_tokens == 3
    assert sample.merged_tokens == 2 and sample.first_merged
    # the two older tokens may have waited up to the whole busy time: more than a token gap (late)
    assert all(wait >= 0.2 for wait in sample.read_lags)
    assert len(sample.read_lags) == 3


def test_tokens_the_server_wrote_together_are_merged_but_not_late():
    def script(conn, seen):
        conn.sendall(HEAD)
        seen["read"].wait(WAIT_S)  # the client has read the head and waits on the socket
        time.sleep(0.5)
        conn.sendall(chunk(token("a")) + chunk(token("b")))  # one write: one packet, one true time
        time.sleep(0.05)
        conn.sendall(END)

    port, seen = serve(script)
    sample, _ = request(port, seen)  # a prompt reader, waiting on the socket
    assert sample.merged_tokens == 1
    # The bound says the read was in time: a waiting reader is woken within milliseconds (tens on
    # a loaded machine). The failure, a bound counted from the head's read, is the 0.5 s gap.
    assert max(sample.read_lags) < 0.2


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
    from harness.load.arrival_stamps import StreamCut

    def script(conn, seen):
        conn.sendall(HEAD + chunk(token("a")))  # and closes without the last chunk

    port, seen = serve(script)
    with pytest.raises(StreamCut):
        request(port, seen)


def test_lines_ended_by_a_bare_carriage_return_are_lines_too():
    def script(conn, seen):
        events = [t.replace(b"\n", b"\r") for t in (token("a"), token("b"))]
        conn.sendall(HEAD + b"".join(chunk(e) for e in events) + END)

    port, seen = serve(script)
    sample, _ = request(port, seen)
    assert sample.ok and sample.text == "ab"


def test_the_single_request_path_reads_bare_carriage_returns_too():
    from harness.endpoints.http_client import stream_chat

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
