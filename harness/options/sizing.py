"""Sizing a deployment from a measured curve: the promise, the peak crowd and the spare share
(``harness capacity``, ``harness summarise``, ``harness demo``; ``harness.bounds.sizing``)."""

from __future__ import annotations

from types import MappingProxyType

from harness import bounds, lab
from harness.options import Option, OptionSet

PROMISE = Option(
    "promise",
    float,
    None,
    "the promise, seconds: the p95 first-token wait by default (capacity: the limit of its "
    "--criterion, a share for goodput)",
    low=1e-3,
    high=bounds.MAX_SECONDS,
    positive=True,
    required=frozenset({"capacity"}),
    defaults=MappingProxyType({"demo": 0.5}),
)
PEAK = Option(
    "peak",
    int,
    None,
    "peak crowd to size for: copies of the server it needs (needs --promise)",
    low=1,
    high=bounds.MAX_PEAK,
    defaults=MappingProxyType({"demo": 120}),
)
SPARES = Option(
    "spares",
    float,
    lab.threshold("spare_share"),
    "spare share added to the copies",
    low=0,
    high=bounds.MAX_SPARES,
)

SIZING = OptionSet("sizing", (PROMISE, PEAK, SPARES))
