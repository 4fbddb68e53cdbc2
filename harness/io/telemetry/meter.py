"""The telemetry of one sweep or search: the sources ``--telemetry`` found,
an idle baseline read once before the first level, and one ``TelemetrySampler`` around each
level, started before its first request and stopped after its last (the sampler's reads run on
their own native thread, off the load loop). What a level's record carries of it is
``harness.core.energy_records.energy_part``'s; this module only reads.

A source asked for by name that is absent here is one line (``Detection.lines``) and the level
records say so (``absent``, a null with its reason); the load is measured all the same."""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.io.telemetry.detect import Detection, Where, detect
from harness.io.telemetry.sampler import DEFAULT_INTERVAL, TelemetrySampler, idle_baseline

DEFAULT_IDLE_S = 2.0


@dataclass(frozen=True)
class TelemetryPlan:
    """What a sweep was asked to read: ``spec`` (``--telemetry``), the interval, the idle
    reading's length (0: none) and whether the idle power is taken off (``--subtract-idle``)."""

    spec: str = "auto"
    interval: float = DEFAULT_INTERVAL
    idle_s: float = DEFAULT_IDLE_S
    subtract_idle: bool = False
    practice_url: str | None = None  # where ``practice`` reads the practice server's imitation


class Meter:
    """The sources of one sweep, its idle baseline and the sampler of the level now running."""

    def __init__(self, plan: TelemetryPlan, found: Detection) -> None:
        self.plan, self.found = plan, found
        self.idle: dict | None = None
        self._sampler: TelemetrySampler | None = None

    @property
    def asked(self) -> str:
        return self.plan.spec

    @property
    def absent(self) -> dict[str, str]:
        return dict(self.found.absent)

    def lines(self) -> list[str]:
        """One line per source asked for that is absent (the sweep prints them)."""
        return self.found.lines()

    def baseline(self) -> dict | None:
        """The idle reading, once (before the first level); None without sources or with 0 s."""
        if self.idle is None and self.found.sources and self.plan.idle_s > 0:
            self.idle = idle_baseline(self.found.sources, self.plan.idle_s, self.plan.interval)
        return self.idle

    def start(self) -> None:
        """A new sampler for the level about to start (nothing without sources)."""
        self._sampler = None
        if self.found.sources:
            self._sampler = TelemetrySampler(self.found.sources, self.plan.interval)
            self._sampler.start()

    def stop(self) -> dict | None:
        """The level's summary (None when no sampler ran)."""
        sampler, self._sampler = self._sampler, None
        if sampler is None:
            return None
        sampler.stop()
        return sampler.summary()

    def split(self) -> dict | None:
        """The running level's summary so far, its sampler going on as a new span (the web UI's
        phases: ``TelemetrySampler.split``); None when no sampler runs."""
        return None if self._sampler is None else self._sampler.split()

    def close(self) -> None:
        self.found.close()


def open_meter(plan: TelemetryPlan, where: Where | None = None) -> Meter:
    """The sources ``plan.spec`` asks for, opened (ConfigError for a spec that is no word); one
    asked for by name and absent is no error here: its line is in ``Meter.lines``."""
    where = where or Where()
    if plan.practice_url and where.practice_url is None:
        where = replace(where, practice_url=plan.practice_url)
    return Meter(plan, detect(plan.spec, where))


def idle_text(idle: dict, telemetry: TelemetryPlan) -> str:
    """The idle baseline in one line."""
    parts = []
    for s in idle.get("sources", []):
        watts = s.get("mean_power_w")
        parts.append(f"{s['source']} {s['device']} {'-' if watts is None else f'{watts:.1f} W'}")
    taken = (
        "taken off each level (--subtract-idle)" if telemetry.subtract_idle else "shown beside, not taken off"
    )
    return f"idle baseline over {idle.get('seconds', 0):g} s: {', '.join(parts)}; {taken}"
