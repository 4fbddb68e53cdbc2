"""llama.cpp's batch achieved per decode call during one level (pure). llama-server's gauge
``llamacpp:n_busy_slots_per_decode`` is an average over the server's whole life: busy slots in all
over decode calls in all since it started (on the CPU llama-server, a burst of four at once read
3.92, then four requests one at a time after it read 2.49, 2.00, 1.75 and 1.60). So a level's mean
of it is not the level's figure. With the decode counter ``llamacpp:n_decode_total`` sampled too,
busy slots in all are g x d, and the level's figure from its first and last samples is
(g1 x d1 - g0 x d0) / (d1 - d0) (``level_per_decode``; the sampler records it as the gauge's
``level``). Where it cannot be taken, the figure is absent with its reason (``level_note``,
``batch_absent``), never the lifetime average shown as the level's.
"""

from __future__ import annotations
from harness.records.level import LEVEL

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

BATCH = "llamacpp:n_busy_slots_per_decode"  # a gauge over llama-server's whole life, not the level's
DECODES = "llamacpp:n_decode_total"  # llama_decode() calls since it started (a counter)
NO_DECODES = (
    "llama-server exposed no llamacpp:n_decode_total, and its n_busy_slots_per_decode is an average "
    "over its whole life, not this level's"
)
OLD_RECORD = (
    "recorded without llamacpp:n_decode_total: the gauge's mean is llama-server's average over its "
    "whole life, not this level's"
)


def level_per_decode(samples: list[tuple[float, float | None]]) -> tuple[float | None, str | None]:
    """llama.cpp's busy slots per decode call during a level, from its /metrics samples in order,
    each (the gauge ``n_busy_slots_per_decode``, the counter ``n_decode_total`` or None where it was
    not exposed): the gauge is busy slots over decode calls since the server started, so the busy
    slots in all are g x d and the level's figure, from the first and last samples, is
    (g1 x d1 - g0 x d0) / (d1 - d0). (figure, None), or (None, why not): no decode counter, one
    sample only, no decode call between them, the counter gone back (a restart). The gauge is
    printed to about six digits, so a figure a hair below 0 is 0."""
    if not samples:
        return None, "llama-server's n_busy_slots_per_decode was never sampled"
    (g0, d0), (g1, d1) = samples[0], samples[-1]
    if d0 is None or d1 is None:
        return None, NO_DECODES
    if len(samples) < 2:
        return None, "one /metrics sample only: no decode calls to count between two"
    if d1 < d0:
        return None, "llamacpp:n_decode_total went back during the level (the server restarted)"
    if d1 == d0:
        return None, "no decode call during the level (llamacpp:n_decode_total did not rise)"
    value = (g1 * d1 - g0 * d0) / (d1 - d0)
    return round(max(value, 0.0), 3), None


def batch_absent(rec: dict) -> str | None:
    """Why a level that sampled llama.cpp's batch gauge has no figure of its own (the sampler's
    ``level_note``; a record from before the level's figure was taken says so); None when it has
    one or sampled no such gauge."""
    gauge = (rec.get(LEVEL.server_metrics) or {}).get(BATCH)
    if not isinstance(gauge, dict) or gauge.get("level") is not None:
        return None
    return str(gauge.get("level_note") or OLD_RECORD)
