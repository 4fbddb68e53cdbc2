"""Server text made safe (reliability round two, classes 2 and 6): secrets redacted, no control character or
escape sequence, always encodable, bounded."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from harness.safe_text import REDACTED, keep_secret, redact, safe_text
from harness.measure.stream import error_message
from harness.endpoints.chat import chat_parser
from harness.endpoints.http_client import auth_headers

KEY = "sk-test-9f8e7d6c5b4a"


def test_a_key_echoed_by_the_server_is_redacted_from_the_error():
    auth_headers(KEY)  # the one place a key becomes a header registers it
    body = {"error": {"message": f"bad header Authorization: Bearer {KEY}; also saw {KEY}x"}}
    text = error_message(body)
    assert KEY not in text and REDACTED in text


def test_a_key_in_a_stream_error_never_reaches_the_sample():
    keep_secret(KEY)
    p = chat_parser(0.0)
    p.feed(b"error: token " + KEY.encode() + b" rejected", 0.1)
    s = p.finish(0.2)
    assert not s.ok and KEY not in s.error and REDACTED in s.error


def test_bearer_tokens_and_url_passwords_are_redacted_whoever_owns_them():
    out = redact("sent Bearer abc.DEF-123 to http://alice:s3cret@host:8000/v1", secrets=set())
    assert "abc.DEF-123" not in out and "s3cret" not in out and "alice" not in out


def test_escape_sequences_and_control_characters_never_reach_the_terminal():
    out = safe_text("\x1b[31mred\x1b[0m \x1b]0;title\x07 bell\x07 nul\x00 del\x7f \r\nnext")
    assert all(c.isprintable() for c in out) and "\x1b" not in out
    assert "red" in out and "next" in out


def test_lone_surrogates_become_encodable():
    text = json.loads('"model \\ud800 x \\udfff"')
    out = safe_text(text)
    out.encode("utf-8")  # no UnicodeEncodeError
    assert out.startswith("model")


@given(st.text(), st.integers(2, 400))
def test_safe_text_is_always_one_printable_encodable_bounded_line(text, limit):
    out = safe_text(text, limit)
    out.encode("utf-8")
    assert len(out) <= limit
    assert all(c.isprintable() for c in out)


SECRET_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"


@given(st.text(alphabet=SECRET_CHARS, min_size=8, max_size=40), st.text(max_size=200))
def test_a_known_secret_never_survives_redaction(secret, around):
    out = redact(around + secret + around, {secret})
    assert secret not in out


def test_every_encoding_and_every_long_piece_of_a_key_is_redacted():
    """Reliability round two, second sweep: the key echoed as base64 or hex, at any base64 alignment inside a
    longer encoded text, or split in two (each half at least FRAGMENT characters)."""
    import base64

    from harness.safe_text import FRAGMENT

    key = "sk-split-and-encoded-4c1d9e7b2a"
    raw = key.encode()
    echoes = [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode(), raw.hex().upper()]
    echoes += [base64.b64encode(b"x" * n + raw + b"yz").decode() for n in range(3)]
    for text in echoes:
        out = redact(f"bad token {text}.", {key})
        assert REDACTED in out and text not in out, (text, out)
    half = len(key) // 2
    out = redact(f'{{"message": "rejected {key[:half]}", "code": "{key[half:]}"}}', {key})
    assert key[:half] not in out and key[half:] not in out and "rejected" in out
    cut = key[: FRAGMENT - 1]  # less than a fragment is not the key: ordinary text stays readable
    assert redact(f"model {cut} is fine", {key}) == f"model {cut} is fine"


def test_redact_tree_reaches_every_string_of_a_record_keys_included():
    from harness.safe_text import redact_tree

    key = "sk-tree-5e6f7a8b9c0d"
    keep_secret(key)
    record = {"called": key, "arguments": {"city": key, key: [1, f"x{key[:10]}"]}, "n": 3, "ok": None}
    out = redact_tree(record)
    assert key[:10] not in json.dumps(out) and out["n"] == 3 and out["ok"] is None
    assert out["called"] == REDACTED and out["arguments"]["city"] == REDACTED


@given(
    st.text(alphabet=SECRET_CHARS, min_size=16, max_size=40),
    st.integers(0, 40),
    st.text(max_size=60),
)
def test_a_key_split_anywhere_never_survives_in_either_long_piece(secret, at, around):
    from harness.safe_text import FRAGMENT

    at = min(at, len(secret))
    out = redact(f"{around}{secret[:at]} | {secret[at:]}{around}", {secret})
    for piece in (secret[:at], secret[at:]):
        if len(piece) >= FRAGMENT:
            assert piece not in out
    assert secret not in out


def test_a_records_own_words_are_not_taken_for_credentials():
    """redact_tree (every record written) removes the known keys only: a label such as "basic
    run" or "Bearer test" is the user's, and must stay as written (summarise matches on it)."""
    from harness.safe_text import redact_tree

    record = {"label": "basic run", "host": "Bearer of news", "url": "http://h:1/v1"}
    assert redact_tree(record) == record


def test_a_key_echoed_in_another_case_is_redacted():
    """Third sweep: a server that echoed the key upper-cased printed it whole."""
    key = "sk-third-sweep-9f8e7d6c5b4a"
    for echo in (key.upper(), key.lower(), key.upper()[3:]):
        out = redact(f"bad key {echo} here", {key})
        assert REDACTED in out and echo not in out, out
