"""How recorded values read in anything a person reads (terminal lines, the dry run, the report):
one home for the wording, so no Python dict, list or ``None`` reaches a reader."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


def setting_value(value: Any) -> str:
    """A setting as stated: its value, or ``not set`` for a setting left out (None or empty)."""
    return "not set" if value is None or value == "" else str(value)


def change_text(changed: Mapping[str, Sequence[Any]] | None) -> str:
    """A variant's change from its base block: ``slots 4 -> 2``; a setting the variant removes
    reads ``-> not set``, one it states again unchanged reads ``stays``."""
    parts = []
    for name, (before, after) in (changed or {}).items():
        if setting_value(before) == setting_value(after):
            parts.append(f"{name} stays {setting_value(after)}")
        else:
            parts.append(f"{name} {setting_value(before)} -> {setting_value(after)}")
    return ", ".join(parts)


def finish_text(reasons: Mapping[str, int] | None) -> str:
    """Finish reasons with their counts, most frequent first: ``length×24, stop×3``."""
    ranked = sorted((reasons or {}).items(), key=lambda item: -item[1])
    return ", ".join(f"{reason}×{count}" for reason, count in ranked) or "none recorded"
