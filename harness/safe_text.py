"""What a server says, made safe to show and to write: the one filter every server text passes
(error bodies, SSE error events, malformed lines, model ids, exception text from a reply).

* **secrets**: every API key this process sends (``keep_secret``, called by the one helper that
  builds the Authorization header) is replaced by ``[redacted]`` wherever a server echoes it,
  whole or in pieces: any run of ``FRAGMENT`` characters of it is redacted, so a key split over two
  fields or two deltas, or cut by a length limit, never survives whole; so are its hex and base64
  forms (at each of base64's three alignments), and any ``Bearer`` token and the ``user:password@``
  part of a URL, whoever's they are; ``redact_tree`` does it to every string of a record;
* **terminal safety**: control characters and escape sequences become ``?`` (a server's text
  never moves the cursor or recolours a terminal), whitespace runs become one space;
* **encodable**: a lone surrogate (a ``\\ud800`` escape in the server's JSON) becomes ``?``, so
  the text can always be written as UTF-8;
* **bounded**: at most ``limit`` characters.
"""

from __future__ import annotations

import base64
import re
from typing import Any

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

REDACTED = "[redacted]"
FRAGMENT = 8  # any run of this many characters of a known secret (or of its encodings) is redacted
_SECRETS: set[str] = set()
_GRAMS: dict[int, set[str]] = {}  # window length -> every window of every known secret and encoding
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=:-]+")
_USERINFO = re.compile(r"(//)[^/@\s]*@")
_ESCAPE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|.)?", re.DOTALL)


def keep_secret(secret: str | None) -> None:
    """Remember a key this process sends, so no server text ever shows it (short values, which
    would redact ordinary words, are left to the Bearer rule)."""
    if secret and len(secret) >= 4 and secret not in _SECRETS:
        _SECRETS.add(secret)
        _GRAMS.clear()
        _GRAMS.update(grams(_SECRETS))


def encodings(secret: str) -> set[str]:
    """The forms a server may echo ``secret`` in: itself (as sent, upper- and lower-cased), hex
    (both cases) and base64 (standard and URL-safe, at each of the three byte alignments it can sit
    at inside a longer encoded text: only the characters that depend on the secret's bytes alone)."""
    raw = secret.encode("utf-8", errors="replace")
    out = {secret, secret.upper(), secret.lower(), raw.hex(), raw.hex().upper()}
    for shift in range(3):
        lo, hi = 8 * shift, 8 * (shift + len(raw))  # the secret's bits in the padded bytes
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(b"\0" * shift + raw + b"\0\0").decode()
            kept = "".join(c for i, c in enumerate(text) if 6 * i >= lo and 6 * i + 6 <= hi)
            if len(kept) >= 4:
                out.add(kept)
    return out


def grams(secrets: set[str] | frozenset[str]) -> dict[int, set[str]]:
    """Every run of ``FRAGMENT`` characters (the whole value when shorter) of every form of every
    secret, by length."""
    out: dict[int, set[str]] = {}
    for secret in secrets:
        for form in encodings(secret):
            w = min(FRAGMENT, len(form))
            out.setdefault(w, set()).update(form[i : i + w] for i in range(len(form) - w + 1))
    return out


def redact(text: str, secrets: set[str] | frozenset[str] | None = None, anyone: bool = True) -> str:
    """``text`` with every piece of a known secret (``FRAGMENT`` characters or more, in any of its
    ``encodings``) replaced, and with ``anyone`` (a server's text) every Bearer/Basic credential
    and URL password too, whoever's they are."""
    found = _GRAMS if secrets is None else grams(secrets)
    spans: list[list[int]] = []
    for w, pieces in found.items():
        for i in range(len(text) - w + 1):
            if text[i : i + w] in pieces:
                if spans and i <= spans[-1][1]:
                    spans[-1][1] = max(spans[-1][1], i + w)
                else:
                    spans.append([i, i + w])
    if len(found) > 1:  # windows of several lengths: merge the spans again, in order
        spans = _merged(sorted(spans))
    for start, end in reversed(spans):
        text = text[:start] + REDACTED + text[end:]
    if not anyone:
        return text
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _USERINFO.sub(rf"\g<1>{REDACTED}@", text)


def _merged(spans: list[list[int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for start, end in spans:
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def redact_tree(value: Any) -> Any:
    """A copy of ``value`` (a record: dicts, lists, strings, numbers) with every piece of a known
    secret redacted from every string in it, keys included. Only the known secrets: a record's own
    words ("basic run" as a label) are not a server's text, and stay as written."""
    if isinstance(value, str):
        return redact(value, anyone=False)
    if isinstance(value, (list, tuple)):
        return [redact_tree(v) for v in value]
    if isinstance(value, dict):
        return {redact_tree(k): redact_tree(v) for k, v in value.items()}
    return value


def printable(text: str) -> str:
    """Text from a file or a server, lines kept, made safe for a terminal: escape sequences and
    every control character but the newline and the tab become ``?``, lone surrogates too."""
    text = text.encode("utf-8", errors="replace").decode("utf-8")
    text = _ESCAPE.sub("?", text)
    return "".join(c if c.isprintable() or c in "\n\t" else "?" for c in text)


def safe_text(text: object, limit: int = 300) -> str:
    """A server's text as one printable, encodable, secret-free line of at most ``limit`` chars."""
    if isinstance(text, bytes):
        text = text[: 4 * limit + 256].decode("utf-8", errors="replace")
    text = str(text)[: 4 * limit + 256]  # no more is shown: a huge body is never scanned whole
    text = text.encode("utf-8", errors="replace").decode("utf-8")  # lone surrogates become "?"
    text = _ESCAPE.sub("?", text)
    text = " ".join(text.split())
    text = "".join(c if c.isprintable() else "?" for c in text)
    text = redact(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
