"""The one rule that turns a label (a sweep's, a plan's: free text) into a file name.

A label may hold anything a person types (``Qwen3 8B @ q4/k``, ``../../../ESCAPED``); a file name
made from it stays inside its folder: only letters, digits, ``.``, ``_`` and ``-`` are kept, every
other run of characters becomes one ``-``, no name starts with a dot or a dash, none is a name
Windows keeps for a device (``con``, ``NUL``, ``com1``, ... whatever follows a dot), and it is at
most ``MAX_NAME`` characters in all. A label changed on the way gets a short hash of the original,
so two labels never share a file (``a/b`` and ``a-b``). Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import re

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

MAX_NAME = 64  # the whole name, its hash included: room left for "-tpot.png" and the like
_HASH = 8
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DEVICE = re.compile(r"(?i)^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\.|$)")  # Windows' device names


def file_label(label: str) -> str:
    """``label`` as a safe file-name part (the same label always gives the same name)."""
    text = str(label)
    safe = _UNSAFE.sub("-", text).lstrip(".-")
    safe = re.sub(r"\.{2,}", ".", safe)
    if safe == text and safe and len(safe) <= MAX_NAME and not _DEVICE.match(safe):
        return safe
    if _DEVICE.match(safe):  # "nul.txt" is still the device to Windows: no dot right after it
        safe = safe.replace(".", "-", 1)
    digest = hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:_HASH]
    head = safe[: MAX_NAME - _HASH - 1].rstrip(".-") or "label"
    return f"{head}-{digest}"
