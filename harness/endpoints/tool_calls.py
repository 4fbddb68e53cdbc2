"""Tool calls as a stream sends them, pure: each call arrives in pieces (its id and name first,
its arguments a few characters at a time), keyed by ``index``; joined here into whole calls."""

from __future__ import annotations

from harness.bounds import MAX_CALLS
from harness.endpoints.wire import MESSAGE

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

MAX_CHARS = 100_000  # characters kept of one call's field


def join_tool_deltas(kept: list[dict], calls: list) -> int:
    """Add one delta's ``tool_calls`` pieces to ``kept`` ({"id", "name", "arguments"} per call, in
    index order): an id replaces, a name and arguments are appended. Malformed pieces are skipped;
    the count returned is of the pieces of calls past ``MAX_CALLS``, which are not kept."""
    dropped = 0
    for call in calls:
        if not isinstance(call, dict):
            continue
        index = call.get(MESSAGE.index, len(kept))
        if not isinstance(index, int) or isinstance(index, bool):
            continue
        if not 0 <= index < MAX_CALLS:
            dropped += index >= MAX_CALLS
            continue
        while len(kept) <= index:
            kept.append({"id": "", "name": "", "arguments": ""})
        whole = kept[index]
        fn = call.get(MESSAGE.function)
        fn = fn if isinstance(fn, dict) else {}
        for key, value in (
            ("id", call.get(MESSAGE.id)),
            ("name", fn.get(MESSAGE.name)),
            ("arguments", fn.get(MESSAGE.arguments)),
        ):
            if isinstance(value, str) and len(whole[key]) + len(value) <= MAX_CHARS:
                whole[key] = value if key == "id" else whole[key] + value
    return dropped
