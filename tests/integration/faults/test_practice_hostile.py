"""The practice server under hostile input (round two, class 8), and its key guard (class 6): every
case answers at once with a one-line 4xx naming what is wrong, and the server still serves.

"At once" is bounded from a server already listening (the fixture waited for its health), by 5 s:
an answer takes milliseconds, tens on a loaded machine. The failure each bound guards against
(the server waiting for bytes that never come) is made to take the read's whole 60 s."""

from __future__ import annotations

import json
import socket
import time

import pytest
import requests

from harness.practice.http import MAX_BODY

CHAT = "/v1/chat/completions"


WAIT_S = 60.0  # how long _raw waits for a server that does not answer (the failure)
AT_ONCE_S = 5.0  # an answer "at once", on a loaded machine


def _raw(port: int, data: bytes, wait_s: float = WAIT_S) -> tuple[bytes, float]:
    """Send raw bytes, read until the server closes or ``wait_s`` passes; (reply, seconds)."""
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as s:
        s.sendall(data)
        out = b""
        try:
            while True:
                got = s.recv(65536)
                if not got:
                    break
                out += got
        except (TimeoutError, socket.timeout):
            pass
    return out, time.monotonic() - t0


def _chat(server, body, timeout: float = 10.0) -> requests.Response:
    return requests.post(server.base_url + "/chat/completions", data=json.dumps(body), timeout=timeout)


def _ok(server) -> None:
    r = _chat(server, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("length", [b"-5", b"6_0", b"+6", b" 1e3", b"0x10"])
def test_a_content_length_that_is_no_plain_number_is_refused_once(practice, length):
    server = practice("kit")
    body = b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}'
    head = b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %s\r\n\r\n" % (CHAT.encode(), length)
    out, took = _raw(server.port, head + body * 3)
    assert out.startswith(b"HTTP/1.1 400") and out.count(b"HTTP/1.1") == 1, out[:300]
    assert b"Content-Length" in out and took < AT_ONCE_S  # not waiting for the rest of a body
    _ok(server)


def test_a_body_past_the_limit_is_refused_before_it_is_read(practice):
    server = practice("kit")
    head = b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (CHAT.encode(), 60 * 10**6)
    out, took = _raw(server.port, head + b"x" * 1000)
    assert out.startswith(b"HTTP/1.1 413") and took < AT_ONCE_S, out[:200]  # not reading 60 MB
    _ok(server)


def test_a_huge_prompt_is_refused_before_tokenising(practice):
    server = practice("kit")
    prompt = "word " * ((MAX_BODY - 1000) // 5)
    r = _chat(server, {"messages": [{"role": "user", "content": prompt}], "max_tokens": 2})
    # Refused by its length in characters, the check before the tokeniser (a refusal after it would
    # count tokens): the words prove the order, which the time of a 4 MB request on a shared
    # machine could not.
    assert r.status_code == 400 and "characters" in r.text, r.text[:300]
    _ok(server)


def test_a_min_items_bomb_gets_a_bounded_example_at_once(practice):
    server = practice("kit")
    schema = {"type": "array", "minItems": 3_000_000, "items": {"type": "array", "minItems": 3_000_000}}
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    t0 = time.monotonic()
    r = _chat(
        server,
        {"messages": [{"role": "user", "content": "a list"}], "max_tokens": 8, "response_format": fmt},
        timeout=WAIT_S,
    )
    # The bomb expanded (9e12 items) never answers; a bounded example answers in milliseconds.
    assert r.status_code == 200 and time.monotonic() - t0 < AT_ONCE_S, r.text[:300]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", "hot"),
        ("temperature", float("nan")),  # JSON has no NaN or Infinity; Python's parser takes them
        ("top_p", float("inf")),
        ("stream", "yes"),
        ("stream_options", [1]),
        ("tools", {"a": 1}),
        ("response_format", "json"),
        ("model", 7),
        ("stop", [1, 2]),
        ("messages", [{"role": "user", "content": 42}]),
        ("tools", [{"function": "f"}]),
    ],
)
def test_wrong_types_answer_400_naming_the_field(practice, field, value):
    server = practice("kit")
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, field: value}
    r = _chat(server, body)
    assert r.status_code == 400, r.text
    assert field.split("[")[0] in r.json()["error"]["message"], r.text


def test_n_above_one_is_refused(practice):
    server = practice("kit")
    r = _chat(server, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "n": 3})
    assert r.status_code == 400 and "'n' must be 1" in r.text


def test_deep_json_is_a_400_not_a_recursion_error(practice):
    server = practice("kit")
    deep = "[" * 200_000 + "]" * 200_000
    r = requests.post(server.base_url + "/chat/completions", data=deep, timeout=10)
    assert r.status_code == 400 and "nested too deeply" in r.text, r.text[:300]
    _ok(server)


def test_a_connection_that_sends_no_whole_head_is_closed(practice):
    server = practice("kit", extra=["--header-timeout", "1"])
    # closed at the 1 s header timeout (plus milliseconds), not held for the read's 60 s
    out, took = _raw(server.port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
    assert out.startswith(b"HTTP/1.1 408") and took < 1 + AT_ONCE_S, (out[:200], took)
    silent, took = _raw(server.port, b"")
    assert silent == b"" and took < 1 + AT_ONCE_S
    _ok(server)


def test_with_a_key_only_health_is_open(practice):
    server = practice("kit", extra=["--api-key-env", "PK"], env={"PK": "sk-guard-123456"})
    assert requests.get(server.root + "/health", timeout=5).status_code == 200
    for path in ("/metrics", "/practice/timing", "/practice/profile", "/practice/truth/x"):
        assert requests.get(server.root + path, timeout=5).status_code == 401, path
    assert requests.post(server.root + "/practice/reset", timeout=5).status_code == 401
    auth = {"Authorization": "Bearer sk-guard-123456"}
    assert requests.get(server.root + "/metrics", headers=auth, timeout=5).status_code == 200


@pytest.mark.parametrize(
    "where, body",
    [
        ("messages[0].content", '{"messages": [{"role": "user", "content": "hi \\ud800 there"}]}'),
        (
            "tools[0].function.name",
            '{"messages": [{"role": "user", "content": "weather?"}], "tool_choice": "required",'
            ' "tools": [{"type": "function", "function": {"name": "get_\\udfff", "parameters": {}}}]}',
        ),
        ("messages[0].content", '{"stream": true, "messages": [{"role": "user", "content": "\\udc00"}]}'),
    ],
)
def test_a_lone_surrogate_is_a_400_naming_the_field_never_a_500(practice, where, body):
    """Reliability round two, second sweep: a lone surrogate in the prompt or a tool's name answered 500
    UnicodeEncodeError; now a 400 that names the field, and the server serves on. A surrogate
    pair (one character written as two escapes) is whole text and is served."""
    server = practice("kit")
    r = requests.post(server.base_url + "/chat/completions", data=body, timeout=10)
    assert r.status_code == 400, r.text
    assert where in r.json()["error"]["message"] and "lone surrogate" in r.text, r.text
    pair = '{"max_tokens": 2, "messages": [{"role": "user", "content": "smile \\ud83d\\ude00"}]}'
    assert requests.post(server.base_url + "/chat/completions", data=pair, timeout=10).status_code == 200
    _ok(server)
