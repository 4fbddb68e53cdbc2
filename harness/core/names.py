"""The one rule that turns a label (a sweep's, a plan's: free text) into a file name.

A label may hold anything a person types (``Qwen3 8B @ q4/k``, ``../../../ESCAPED``); a file name
made from it stays inside its folder: only letters, digits, ``.``, ``_`` and ``-`` are kept, every
other run of characters becomes one ``-``, no name starts with a dot or a dash, and it is at most
``MAX_NAME`` characters. A label changed on the way gets a short hash of the original, so two
labels never share a file (``a/b`` and ``a-b``). Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def file_label(label: str) -> str:
    """``label`` as a safe file-name part (the same label always gives the same name)."""
    text = str(label)
    safe = _UNSAFE.sub("-", text).lstrip(".-")
    safe = re.sub(r"\.{2,}", ".", safe)[:MAX_NAME]
    if safe == text and safe:
        return safe
    digest = hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:8]
    return f"{safe.rstrip('.-') or 'label'}-{digest}"
