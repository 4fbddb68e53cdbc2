"""AMD GPUs and APUs through the amdgpu driver's sysfs files (Linux), the path for a Ryzen AI
Max+ APU without ``amdsmi``. For each ``<root>/card<N>/device/`` whose ``hwmon/hwmon*/name`` is
``amdgpu``:

- power: ``hwmon*/power1_average``, else ``power1_input`` (microwatts; an APU often has only the
  second);
- energy: ``hwmon*/energy1_input`` (microjoules) where the driver gives it, else None and a
  level's energy is its power readings integrated;
- utilisation: ``gpu_busy_percent``; memory used: ``mem_info_vram_used`` (bytes; an APU's
  carve-out, its GTT share is not counted here); temperature: ``hwmon*/temp1_input``
  (millidegrees); clocks: ``hwmon*/freq1_input`` (sclk) and ``freq2_input`` (mclk), in Hz.

Every file is read whole but at most 64 bytes (``base.read_text``). ``root`` is a parameter so
tests read a tree in a temporary folder."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Callable

from harness.energy.arithmetic import FIGURE
from harness.energy.readings import Reading, make_reading
from harness.errors import TelemetryUnavailable
from harness.energy.sources.base import read_number, read_text

ROOT = Path("/sys/class/drm")
CARD = re.compile(r"card\d+")
# figure -> (folder: "hwmon" or "device", file names tried in order, scale to the figure's unit)
FILES: dict[str, tuple[str, tuple[str, ...], float]] = {
    FIGURE.power_w: ("hwmon", ("power1_average", "power1_input"), 1e-6),
    FIGURE.energy_j: ("hwmon", ("energy1_input",), 1e-6),
    FIGURE.utilisation_pct: ("device", ("gpu_busy_percent",), 1.0),
    FIGURE.memory_used_mb: ("device", ("mem_info_vram_used",), 1e-6),
    FIGURE.temperature_c: ("hwmon", ("temp1_input",), 1e-3),
}
CLOCKS = {"sclk": "freq1_input", "mclk": "freq2_input"}


def _first(folder: Path, names: tuple[str, ...], scale: float) -> tuple[float | None, str | None]:
    why = None
    for name in names:
        value, why = read_number(folder / name, scale)
        if value is not None:
            return value, None
    return None, why


class HwmonSource:
    kind = "hwmon"

    def __init__(self, card: Path, hwmon: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.device, self.clock = card.name, clock
        self.folders = {"device": card / "device", "hwmon": hwmon}

    def read(self) -> Reading:
        at = self.clock()
        values: dict = {}
        missing: dict[str, str] = {}
        for figure, (where, names, scale) in FILES.items():
            values[figure], why = _first(self.folders[where], names, scale)
            if why:
                missing[figure] = f"amdgpu: {why}"
        if values[FIGURE.power_w] is None and values[FIGURE.energy_j] is None:
            raise TelemetryUnavailable(f"hwmon {self.device}: {missing['power_w']}")
        for name, file in CLOCKS.items():
            values[f"clock_{name}_mhz"], why = read_number(self.folders["hwmon"] / file, 1e-6)
            if why:
                missing[f"clock_{name}_mhz"] = f"amdgpu: {why}"
        return make_reading(self.kind, self.device, at, values, missing)

    def close(self) -> None:
        pass


def _amdgpu_hwmon(card: Path) -> Path | None:
    for hwmon in sorted((card / "device" / "hwmon").glob("hwmon*")):
        if (read_text(hwmon / "name")[0] or "") == "amdgpu":
            return hwmon
    return None


def open_sources(root: Path = ROOT, clock: Callable[[], float] = time.monotonic) -> tuple[list, str | None]:
    """A source for each amdgpu card with a power file, or no source and the one line why."""
    if not root.is_dir():
        return [], f"hwmon: no {root}: not Linux, or no GPU driver loaded"
    cards = sorted((p for p in root.iterdir() if CARD.fullmatch(p.name)), key=lambda p: int(p.name[4:]))
    sources = []
    for card in cards:
        hwmon = _amdgpu_hwmon(card)
        if hwmon is not None and _first(hwmon, FILES[FIGURE.power_w][1], 1.0)[0] is not None:
            sources.append(HwmonSource(card, hwmon, clock))
    if not sources:
        return [], f"hwmon: no amdgpu card with a power1_average or power1_input under {root}"
    return sources, None
