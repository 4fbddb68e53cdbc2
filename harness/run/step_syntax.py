"""How a plan's YAML writes a step, before the plan is read (``plans``) or rehearsed
(``rehearsal``): a bare kind (``report``), or one key, the kind, holding its options (a list of
options is kept as ``items``: ``compare: [[a, b]]``)."""

from __future__ import annotations

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


def split_step(raw) -> tuple[str, dict]:
    if isinstance(raw, str):
        return raw, {}
    ((kind, options),) = raw.items()
    return kind, dict(options or {}) if isinstance(options, dict) else {"items": options}
