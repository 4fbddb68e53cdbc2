"""What a server says, made safe to show and to write: the one filter every server text passes
(error bodies, SSE error events, malformed lines, model ids, exception text from a reply).

* **secrets**: every API key this process sends (``keep_secret``, called by the one helper that
  builds the Authorization header) is replaced by ``[redacted]`` wherever a server echoes it; so
  is any ``Bearer`` token and the ``user:password@`` part of a URL, whoever's they are;
* **terminal safety**: control characters and escape sequences become ``?`` (a server's text
  never moves the cursor or recolours a terminal), whitespace runs become one space;
* **encodable**: a lone surrogate (a ``\\ud800`` escape in the server's JSON) becomes ``?``, so
  the text can always be written as UTF-8;
* **bounded**: at most ``limit`` characters.
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"
_SECRETS: set[str] = set()
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=:-]+")
_USERINFO = re.compile(r"(//)[^/@\s]*@")
_ESCAPE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|.)?", re.DOTALL)


def keep_secret(secret: str | None) -> None:
    """Remember a key this process sends, so no server text ever shows it (short values, which
    would redact ordinary words, are left to the Bearer rule)."""
    if secret and len(secret) >= 4:
        _SECRETS.add(secret)


def redact(text: str, secrets: set[str] | frozenset[str] | None = None) -> str:
    """``text`` with every known secret, Bearer/Basic credential and URL password replaced."""
    for secret in sorted(_SECRETS if secrets is None else secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _USERINFO.sub(rf"\g<1>{REDACTED}@", text)


def safe_text(text: object, limit: int = 300) -> str:
    """A server's text as one printable, encodable, secret-free line of at most ``limit`` chars."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = str(text)
    text = text.encode("utf-8", errors="replace").decode("utf-8")  # lone surrogates become "?"
    text = _ESCAPE.sub("?", text)
    text = " ".join(text.split())
    text = "".join(c if c.isprintable() else "?" for c in text)
    text = redact(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
