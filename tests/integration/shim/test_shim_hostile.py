"""The shim against a hostile client (round three, class 8), each case by a test that fails without
its fix: bodies too long or never sent, Content-Length with Transfer-Encoding, headers and bodies
sent a byte at a time, a thousand connections at once, bad log offsets and encoded names. Each is
refused in bounded time, nothing starts without the token, and the shim answers afterwards.

The shim runs with a 1 s header and body deadline and 8 connections (its flags), so that each
test takes seconds; the time bounds asserted (10 s and more) are far from both the deadline and
the failure they catch (a connection held for as long as the client likes)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.integration.shim.conftest import start_shim, write_allow, write_plan

LIMITS = ("--header-timeout", "1", "--body-timeout", "1", "--max-connections", "8")


@pytest.fixture
def tight(tmp_path: Path, library: Path):
    plan = write_plan(tmp_path, [{"id": "practice", "engine": "practice-shim"}])
    s = start_shim(write_allow(tmp_path, plan, library), tmp_path / "state", library, LIMITS)
    yield s
    s.stop()


def _connect(shim) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", shim.port), timeout=15)
    sock.settimeout(15)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Read until the shim closes (or 15 s pass: a hang fails the test). One recv is not enough:
    the head and the body of an answer may arrive in separate segments."""
    got = b""
    while True:
        try:
            part = sock.recv(65536)
        except (socket.timeout, ConnectionResetError):
            return got
        if not part:
            return got
        got += part


def _exchange(shim, raw: bytes) -> bytes:
    """Send ``raw``, then read the whole answer."""
    with _connect(shim) as sock:
        sock.sendall(raw)
        return _read_all(sock)


def _statuses(answer: bytes) -> list[int]:
    return [int(line.split()[1]) for line in answer.split(b"\r\n") if line.startswith(b"HTTP/1.1 ")]


def _start(shim, headers: str, body: bytes = b"", token: bool = True) -> bytes:
    auth = f"Authorization: Bearer {shim.token}\r\n" if token else ""
    head = f"POST /v1/engines/practice-shim/start HTTP/1.1\r\nHost: x\r\n{auth}{headers}\r\n"
    return head.encode() + body


def _still_answers(shim) -> None:
    assert shim.get("/v1/health").status_code == 200
    assert shim.get("/v1/engines/practice-shim").json()["running"] is False


def test_no_token_and_a_huge_length_is_401_without_reading_the_body(tight):
    t0 = time.monotonic()
    answer = _exchange(tight, _start(tight, "Content-Length: 100000000\r\n", token=False))
    assert _statuses(answer) == [401]
    assert time.monotonic() - t0 < 10  # not the body deadline, nor 10^8 bytes' wait
    _still_answers(tight)


def test_an_oversized_or_odd_length_is_400_and_closed(tight):
    for length in ("100000000", "+5", "5_0", "\u0665".encode().decode("latin-1")):
        answer = _exchange(tight, _start(tight, f"Content-Length: {length}\r\n"))
        assert _statuses(answer) == [400], length
        assert b"Connection: close" in answer
    _still_answers(tight)


def test_a_length_with_no_body_is_408_within_the_deadline(tight):
    t0 = time.monotonic()
    with _connect(tight) as sock:
        sock.sendall(_start(tight, "Content-Length: 100\r\n", b'{"settings"'))
        answer = _read_all(sock)
    assert _statuses(answer) == [408] and b"did not arrive" in answer
    assert time.monotonic() - t0 < 10
    _still_answers(tight)


def test_content_length_with_chunked_smuggles_nothing(tight):
    smuggled = (
        b"GET /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tight.token.encode() + b"\r\n\r\n"
    )
    body = b"0\r\n\r\n" + smuggled
    both = _start(tight, f"Content-Length: {len(body)}\r\nTransfer-Encoding: chunked\r\n", body)
    assert _statuses(_exchange(tight, both)) == [400]  # one answer: the smuggled GET is not read
    chunk = b'{"settings": {"port": 1}}'
    chunked = _start(tight, "Transfer-Encoding: chunked\r\n", b"%x\r\n%s\r\n0\r\n\r\n" % (len(chunk), chunk))
    assert _statuses(_exchange(tight, chunked)) == [501]
    # Without the token either is 401 and closed, and the smuggled request is still not answered.
    assert _statuses(
        _exchange(tight, _start(tight, "Transfer-Encoding: chunked\r\n", body, token=False))
    ) == [401]
    _still_answers(tight)


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_byte_a_second_is_cut_off_at_the_deadline(tight, where):
    if where == "headers":
        raw, ahead = _start(tight, "X-Slow: " + "a" * 40 + "\r\n"), 20
    else:
        raw = _start(tight, "Content-Length: 30\r\n", b'{"settings": {"port": 1}}    ')
        ahead = raw.index(b"\r\n\r\n") + 4
    t0 = time.monotonic()
    with _connect(tight) as sock:
        sock.sendall(raw[:ahead])
        closed = False
        for byte in raw[ahead:]:  # one byte each 0.25 s: ~10 s for what is left, unless cut off
            try:
                sock.sendall(bytes([byte]))
                time.sleep(0.25)
            except OSError:
                closed = True
                break
        if not closed:
            sock.settimeout(0.5)
            try:
                closed = sock.recv(65536) is not None
            except socket.timeout:
                closed = False
    assert closed and time.monotonic() - t0 < 9  # held 1 s (the deadline), not the client's ~10 s
    _still_answers(tight)


def test_a_thousand_connections_cost_no_thousand_threads(tight):
    socks = []
    try:
        for _ in range(1000):
            s = socket.socket()
            s.settimeout(15)
            s.connect(("127.0.0.1", tight.port))
            socks.append(s)
        time.sleep(0.5)
        threads = int(
            next(
                x
                for x in Path(f"/proc/{tight.proc.pid}/status").read_text().splitlines()
                if x.startswith("Threads:")
            ).split()[1]
        )
        assert threads <= 8 + 4  # the 8 connections served, the main thread and a few
        # Past the bound a connection gets 503 and is closed; a served one that sends nothing is
        # closed at its 1 s header deadline. Either way none is held (recv would time out at 15 s).
        answers = [s.recv(4096) for s in socks[-50:]]
        assert all(a == b"" or b" 503 " in a for a in answers)
        assert sum(b" 503 " in a for a in answers) >= 25
    finally:
        for s in socks:
            s.close()
    deadline = time.monotonic() + 15  # the 8 held ones are let go at their 1 s header deadline
    while time.monotonic() < deadline:
        try:
            if tight.get("/v1/health").status_code == 200:
                break
        except OSError:
            time.sleep(0.2)
    _still_answers(tight)


@pytest.mark.parametrize("offset", ["-1", "100000000000000000000", "%D9%A3", "%C2%B2", "1&offset=2", "0x10"])
def test_a_bad_log_offset_is_400(tight, offset):
    r = tight.get(f"/v1/engines/practice-shim/log?offset={offset}")
    assert r.status_code == 400 and "offset" in r.json()["error"]
    assert tight.get("/v1/engines/practice-shim/log?offset=0").status_code == 200


@pytest.mark.parametrize(
    "line",
    [
        "Transfer-Encoding : chunked",
        "garbage\r\nTransfer-Encoding: chunked",
        "X-A: 1\r\n Transfer-Encoding: chunked",
    ],
)
def test_a_header_line_that_is_no_header_is_400_and_hides_nothing(tight, line):
    """'Transfer-Encoding : chunked' (a space before the colon, the classic smuggling spelling), a
    line that is no header (Python's parser then reads no header after it: a Transfer-Encoding
    there went unseen) and a folded line were answered as if the header block were whole."""
    smuggled = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
    body = b"0\r\n\r\n" + smuggled
    answer = _exchange(tight, _start(tight, f"Content-Length: {len(body)}\r\n{line}\r\n", body))
    assert _statuses(answer) == [400] and b"no 'Name: value'" in answer, answer[:300]
    assert b"Connection: close" in answer
    _still_answers(tight)


def test_a_body_nested_past_the_parser_is_400_not_a_shim_error(tight):
    """60 KB of brackets (within the 64 KiB a body may have) was a 500 'shim error: RecursionError'."""
    for body in (b"[" * 30000 + b"]" * 30000, b'{"settings": ' + b'{"a": ' * 9000 + b"1" + b"}" * 9001):
        answer = _exchange(
            tight, _start(tight, f"Content-Length: {len(body)}\r\nConnection: close\r\n", body)
        )
        assert _statuses(answer) == [400] and b"the request body is not JSON" in answer, answer[:300]
    _still_answers(tight)


@pytest.mark.parametrize(
    "name", ["%2e%2e", "..%2f..%2fetc", "%252e%252e", "%2E%2E%2Fhealth", "practice-shim%2f..", ".."]
)
def test_an_encoded_name_is_400_and_starts_nothing(tight, name):
    for path in (f"/v1/engines/{name}/start", f"/v1/engines/{name}/log"):
        auth = f"Authorization: Bearer {tight.token}\r\n"
        raw = f"POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: 2\r\n\r\n{{}}"
        assert _statuses(_exchange(tight, raw.encode()))[0] == 400, path
    r = tight.post("/v1/engines/practice-shim/start", {"settings": {"port": free_port()}}, token="wrong")
    assert r.status_code == 401
    _still_answers(tight)
