"""``--telemetry auto|none|SOURCE[,SOURCE...]``: which sources read this machine, and one line for
each that does not. A table maps each source's word to its opener (no if-chain); each opener
answers its sources, or none and the one line why (absent, refused, not this system). ``auto``
tries every one and keeps what it finds (amdsmi first: where it lists cards, their hwmon files
are not read as well); a source asked for by name that is absent gives, through
``Detection.refusal()``, a ``TelemetryUnavailable`` whose message is that line. Nothing here
makes up a figure: a machine with no source is an empty list and its reasons.

``practice`` (the practice server's imitation power, harness/energy/sources/practice.py) is a word of
its own, never part of ``auto``: an imitation is read only when asked for by name."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness.errors import ConfigError, TelemetryUnavailable
from harness.endpoints import shim_host
from harness.energy import IMITATIONS, KINDS, WORDS
from harness.energy.sources import amd_smi, hwmon, nvml, powermetrics, practice, rapl
from harness.energy.sources.base import Source


@dataclass(frozen=True)
class Where:
    """Where each opener looks: the tests point these at a temporary tree or a stand-in."""

    drm_root: Path = hwmon.ROOT
    powercap_root: Path = rapl.ROOT
    nvml_bindings: Any = None  # None: import pynvml
    amdsmi_bindings: Any = None  # None: import amdsmi
    run: Callable[[list[str]], bytes | None] | None = None  # powermetrics' runner; None: as below
    # The host-side shim that runs powermetrics (HARNESS_SHIM_URL); None: powermetrics runs here.
    shim_url: str | None = field(default_factory=shim_host.shim_url)
    clock: Callable[[], float] = time.monotonic
    practice_url: str | None = None  # the practice server's /practice/power (the sweep's server)


OPENERS: dict[str, Callable[[Where], tuple[list, str | None]]] = {
    "nvml": lambda w: nvml.open_sources(w.nvml_bindings, w.clock),
    "amdsmi": lambda w: amd_smi.open_sources(w.amdsmi_bindings, w.clock),
    "hwmon": lambda w: hwmon.open_sources(w.drm_root, w.clock),
    "powermetrics": lambda w: powermetrics.open_sources(w.run, clock=w.clock, shim_url=w.shim_url),
    "rapl": lambda w: rapl.open_sources(w.powercap_root, w.clock),
    "practice": lambda w: practice.open_sources(w.practice_url, w.clock),
}


def parse_spec(spec: str) -> tuple[tuple[str, ...], bool]:
    """The sources a ``--telemetry`` value asks for, and whether by name (so an absent one is
    refused). ConfigError for a word that is none of ``WORDS`` or ``auto``/``none`` in a list."""
    words = [w.strip().lower() for w in (spec or "").split(",") if w.strip()]
    unknown = [w for w in words if w not in WORDS]
    if not words or unknown:
        raise ConfigError(
            f"--telemetry {spec!r}: give auto, none or any of {', '.join(KINDS + IMITATIONS)} "
            "(comma-separated)"
        )
    if len(words) > 1 and {"auto", "none"} & set(words):
        raise ConfigError(f"--telemetry {spec!r}: auto and none stand alone")
    if words == ["auto"]:
        return KINDS, False
    if words == ["none"]:
        return (), False
    return tuple(dict.fromkeys(words)), True


@dataclass
class Detection:
    """What ``detect`` found: the sources, and for each source word that gave none, why."""

    spec: str
    by_name: bool
    sources: list[Source] = field(default_factory=list)
    absent: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """One line per absent source, as the sweep prints them."""
        return list(self.absent.values())

    def refusal(self) -> TelemetryUnavailable | None:
        """The error for a source asked for by name that is absent (all such in one line), or None."""
        if not self.by_name or not self.absent:
            return None
        lines = "; ".join(self.absent.values())
        return TelemetryUnavailable(f"--telemetry {self.spec}: {lines} (--telemetry auto reads what is here)")

    def record(self) -> dict:
        """What a run record says of its telemetry: asked, found (source and device), absent."""
        found = [{"source": s.kind, "device": s.device} for s in self.sources]
        return {"asked": self.spec, "found": found, "absent": dict(self.absent)}

    def close(self) -> None:
        for source in self.sources:
            source.close()


def detect(spec: str = "auto", where: Where | None = None) -> Detection:
    """Open every source ``spec`` asks for that is present here (ConfigError for a bad spec)."""
    kinds, by_name = parse_spec(spec)
    where = where or Where()
    found = Detection(spec, by_name)
    if not kinds:
        found.absent["none"] = "telemetry: off (--telemetry none)"
    for kind in kinds:
        if kind == "hwmon" and not by_name and any(s.kind == "amdsmi" for s in found.sources):
            found.absent[kind] = "hwmon: amdsmi reads these cards already"  # asked for both: both read
            continue
        sources, why = OPENERS[kind](where)
        found.sources.extend(sources)
        if why:
            found.absent[kind] = why
    return found
