"""How a plan's YAML writes a step, before the plan is read (``plans``) or rehearsed
(``rehearsal``): a bare kind (``report``), or one key, the kind, holding its options (a list of
options is kept as ``items``: ``compare: [[a, b]]``); and the ids of the steps a block's step
becomes (a prefix pair is two sweeps)."""

from __future__ import annotations

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


def split_step(raw) -> tuple[str, dict]:
    if isinstance(raw, str):
        return raw, {}
    ((kind, options),) = raw.items()
    return kind, dict(options or {}) if isinstance(options, dict) else {"items": options}


PREFIX_SIDES = ("unique", "shared")  # the prefix pair's two sweeps, the control first (the lab's order)


def prefix_pair_label(prefix: str, side: str) -> str:
    """One sweep's label in a prefix pair: ``llama-prefix-unique``."""
    return f"{prefix}-prefix-{side}"


def step_ids(block_id: str, kind: str, options: dict) -> list[str]:
    """The ids of the steps one of a block's steps becomes: itself (``vllm/measure``), a sweep or
    admission with its label (``vllm/sweep:vllm-baseline``), a prefix pair as its two sweeps."""
    if kind == "prefix-pair":
        prefix = options.get("label_prefix", block_id)
        return [f"{block_id}/sweep:{prefix_pair_label(prefix, side)}" for side in PREFIX_SIDES]
    if kind in ("sweep", "admission"):
        return [f"{block_id}/{kind}:{options.get('label') or f'{block_id}-{kind}'}"]
    return [f"{block_id}/{kind}"]
