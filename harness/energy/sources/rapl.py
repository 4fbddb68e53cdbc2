"""CPUs through RAPL's powercap files (Linux): each top-level zone
``<root>/intel-rapl:N/`` (``name`` package-0, psys, ...; AMD's CPUs use the same driver) gives
``energy_uj``, a counter in microjoules that starts again from 0 at ``max_energy_range_uj``. The
sub-zones (``intel-rapl:0:0``, the cores inside package-0) are inside their package and left out;
so are ``intel-rapl-mmio:*``, a second view of the same package. Since 2020 most kernels make
``energy_uj`` readable by root only: that is one line saying so, not a figure.

RAPL has a counter and no power reading: the reading's power is None, and a level's mean power
is its energy over its time. ``root`` is a parameter so tests read a tree in a temporary folder."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Callable

from harness.energy.arithmetic import FIGURE
from harness.energy.readings import Reading, make_reading
from harness.errors import TelemetryUnavailable
from harness.energy.sources.base import read_number, read_text

ROOT = Path("/sys/class/powercap")
UJ = 1e-6
ZONE = re.compile(r"intel-rapl:\d+")
NO_POWER = "RAPL gives an energy counter only: power is the energy over the time"
NOT_GIVEN = {
    FIGURE.power_w: NO_POWER,
    FIGURE.utilisation_pct: "RAPL gives no utilisation",
    FIGURE.memory_used_mb: "RAPL gives no memory figure",
    FIGURE.temperature_c: "RAPL gives no temperature",
}


class RaplSource:
    kind = "rapl"

    def __init__(self, zone: Path, name: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.zone, self.device, self.clock = zone, name, clock
        self.wrap_j, why = read_number(zone / "max_energy_range_uj", UJ)
        self.wrap_why = why

    def read(self) -> Reading:
        at = self.clock()
        joules, why = read_number(self.zone / "energy_uj", UJ)
        if joules is None:
            raise TelemetryUnavailable(f"rapl {self.device}: {why}")
        missing = dict(NOT_GIVEN)
        if self.wrap_j is None:  # without the range a step down is taken as a reset, never as energy
            missing["energy_wrap_j"] = f"{self.wrap_why}; a step down is then a reset"
        wrap = self.wrap_j if self.wrap_j and joules < self.wrap_j else None
        values = {FIGURE.energy_j: joules, **dict.fromkeys(NOT_GIVEN)}
        return make_reading(self.kind, self.device, at, values, missing, wrap_j=wrap)

    def close(self) -> None:
        pass


def open_sources(root: Path = ROOT, clock: Callable[[], float] = time.monotonic) -> tuple[list, str | None]:
    """Every top-level zone whose counter this user can read, or no source and the one line why."""
    if not root.is_dir():
        return [], f"rapl: no powercap folder ({root}): not Linux, or no RAPL driver loaded"
    zones = sorted((p for p in root.iterdir() if ZONE.fullmatch(p.name)), key=lambda p: p.name)
    if not zones:
        return [], f"rapl: {root} has no intel-rapl zone"
    sources, refused = [], []
    for zone in zones:
        name = (read_text(zone / "name")[0] or zone.name).strip()
        _, why = read_number(zone / "energy_uj", UJ)
        if why:
            refused.append(f"{name}: {why}")
        else:
            sources.append(RaplSource(zone, name, clock))
    if not sources:
        return [], "rapl: " + "; ".join(refused)
    return sources, None
