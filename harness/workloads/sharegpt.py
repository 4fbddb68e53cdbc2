"""A reader for ShareGPT-format conversation files a person brings (pure: it reads text).

The format: a JSON array (or JSON Lines) of objects, each with ``conversations``: a list of
``{"from": ..., "value": ...}`` messages, ``from`` one of ``human``/``user``, ``gpt``/``chatgpt``/
``assistant``/``bard``/``bing`` or ``system``. What the harness takes of each conversation is its
user messages in order (the server writes the answers); a conversation without one is skipped and
counted.
"""

from __future__ import annotations

import json

from harness.errors import ConfigError

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

USER_ROLES = ("human", "user")
OTHER_ROLES = ("gpt", "chatgpt", "assistant", "bard", "bing", "model", "system", "tool", "function")


def _items(text: str, name: str) -> list:
    stripped = text.lstrip()
    if not stripped:
        raise ConfigError(f"{name}: the file is empty; give a ShareGPT JSON array or JSON Lines file")
    try:
        if stripped.startswith("["):
            data = json.loads(stripped)
            return data if isinstance(data, list) else []
        return [json.loads(line) for line in stripped.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{name}: not ShareGPT JSON ({exc.msg} at line {exc.lineno})") from None


def read_sharegpt(text: str, name: str = "sharegpt") -> tuple[list[tuple[str, ...]], int]:
    """(each conversation's user messages in order, how many conversations were skipped for having
    none). ConfigError, one line, for a file that is not ShareGPT or holds no usable conversation."""
    out: list[tuple[str, ...]] = []
    skipped = 0
    for i, item in enumerate(_items(text, name), 1):
        turns = item.get("conversations") if isinstance(item, dict) else None
        if not isinstance(turns, list):
            raise ConfigError(
                f"{name}: item {i} has no 'conversations' list (ShareGPT: [{{'from', 'value'}}, ...])"
            )
        users = tuple(
            m["value"]
            for m in turns
            if isinstance(m, dict)
            and m.get("from") in USER_ROLES
            and isinstance(m.get("value"), str)
            and m["value"]
        )
        if users:
            out.append(users)
        else:
            skipped += 1
    if not out:
        raise ConfigError(f"{name}: no conversation with a user message ('from': 'human') in it")
    return out, skipped
