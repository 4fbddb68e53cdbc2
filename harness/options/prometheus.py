"""The client's own figures served for Prometheus while the load runs: on ``harness sweep``,
``harness capacity`` and Locust's runs (``harness.exporter``)."""

from __future__ import annotations

from harness.options import Option, OptionSet

PROMETHEUS_PORT = Option(
    "prometheus-port",
    int,
    help="serve the client's live figures (in flight, completed, failed, TTFT, TPOT and ITL "
    "histograms, output tokens, the level) for Prometheus at http://HOST:PORT/metrics; none by default",
    low=1,
    high=65535,
    metavar="PORT",
)
PROMETHEUS_HOST = Option(
    "prometheus-host",
    default="127.0.0.1",
    help="the address --prometheus-port binds (127.0.0.1 by default; another is reachable from "
    "beyond this machine without a password)",
    metavar="HOST",
)
PROMETHEUS_HOLD = Option(
    "prometheus-hold",
    float,
    0.0,
    "seconds the figures stay served after the last level, so a scrape reads its totals (one "
    "scrape interval or more)",
    low=0,
    high=3600,
    metavar="S",
)

PROMETHEUS = OptionSet("prometheus", (PROMETHEUS_PORT, PROMETHEUS_HOST, PROMETHEUS_HOLD))
