"""The practice server's imitation power figure (``GET /practice/power``): watts as its profile's
``imitation_power`` makes them from its busy seats (no energy counter: a level's energy is that
power integrated over the readings). An
IMITATION, never a measurement: every reading is labelled "imitation", and so is every level
record, summary line, chart and report section built from it. ``--telemetry auto`` never reads
it; only ``--telemetry practice`` does (or a list naming it), so a real run cannot pick it up.

The read goes through ``harness.endpoints.http_client`` under a short bound, as every request to a server
under test does."""

from __future__ import annotations

import time
from typing import Callable

from harness.bounds import Bounds
from harness.energy.arithmetic import FIGURE
from harness.energy.readings import Reading, make_reading
from harness.errors import HarnessError, TelemetryUnavailable
from harness.endpoints import http_client as http

LABEL = "imitation"
ROUTE = "/practice/power"
BOUND_S = 2.0
NOT_GIVEN = {
    FIGURE.energy_j: "the practice server gives no energy counter (its power is integrated)",
    FIGURE.utilisation_pct: "the practice server imitates power only",
    FIGURE.memory_used_mb: "the practice server imitates power only",
    FIGURE.temperature_c: "the practice server imitates power only",
}


class PracticePower:
    """One practice server's imitation power and energy counter."""

    kind = "practice"

    def __init__(self, url: str, device: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.url, self.device, self.clock = url, device, clock

    def read(self) -> Reading:
        at = self.clock()
        body = fetch(self.url)
        values = {FIGURE.power_w: body.get("power_w"), **dict.fromkeys(NOT_GIVEN)}
        return make_reading(self.kind, self.device, at, values, dict(NOT_GIVEN), label=LABEL)

    def close(self) -> None:
        pass


def fetch(url: str) -> dict:
    """The route's JSON; TelemetryUnavailable in one line for no answer, a 404 or a broken body."""
    try:
        reply = http.request("GET", url, Bounds.of(BOUND_S), verify=False, limit=1 << 14)
    except HarnessError as exc:
        raise TelemetryUnavailable(f"practice: {exc}") from exc
    if reply.status == 404:
        raise TelemetryUnavailable(
            f"practice: {url} answers 404: its profile publishes no imitation power (imitation_power:)"
        )
    try:
        body = reply.json() if reply.status == 200 else None
    except ValueError:
        body = None
    if not isinstance(body, dict) or body.get("label") != LABEL:
        raise TelemetryUnavailable(
            f"practice: {url} answered {reply.status}, not the practice server's power"
        )
    return body


def open_sources(url: str | None, clock: Callable[[], float] = time.monotonic) -> tuple[list, str | None]:
    """The practice server's power source at ``url``, or none and the one line why."""
    if not url:
        return [], "practice: no server to read (the server's address, --base-url or --host, gives it)"
    try:
        body = fetch(url)
    except TelemetryUnavailable as exc:
        return [], str(exc)
    return [PracticePower(url, f"imitation of {body.get('profile', 'the practice server')}", clock)], None
