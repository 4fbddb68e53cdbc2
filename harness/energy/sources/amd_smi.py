"""AMD GPUs through AMD's own ``amdsmi`` Python bindings, where they are installed (ROCm puts
them in ``/opt/rocm/share/amd_smi``; they are not a dependency of the harness). Without them,
``hwmon.py`` reads the same driver's sysfs files. Per device:

- power: ``amdsmi_get_power_info`` (W): ``current_socket_power`` (MI300 and later), else
  ``average_socket_power``, else ``socket_power``; the bindings answer "N/A" for a field the
  device lacks;
- energy: ``amdsmi_get_energy_count``: the accumulator (``energy_accumulator``, ``power`` in
  older bindings) times ``counter_resolution`` (microjoules per count);
- utilisation: ``amdsmi_get_gpu_activity()['gfx_activity']`` (%); memory used:
  ``amdsmi_get_gpu_memory_usage(VRAM)`` (bytes); temperature: ``amdsmi_get_temp_metric`` (edge,
  current; degrees C); clock: ``amdsmi_get_clock_info(GFX)`` (``cur_clk``, ``clk`` in older
  bindings; MHz)."""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable

from harness.energy.arithmetic import FIGURE
from harness.energy.readings import Reading, make_reading
from harness.errors import TelemetryUnavailable

NOT_INSTALLED = "amdsmi: AMD's amdsmi bindings are not installed here (ROCm's share/amd_smi)"
POWER_FIELDS = ("current_socket_power", "average_socket_power", "socket_power")


def _bindings() -> Any:
    try:
        import amdsmi
    except ImportError:  # also an ImportError when the bindings find no libamd_smi.so
        return None
    return amdsmi


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):  # "N/A"
        return None


def _first(info: dict, names: tuple[str, ...]) -> Any:
    return next((info[n] for n in names if _number(info.get(n)) is not None), None)


class _Session:
    """One ``amdsmi_init`` shared by every device's source: shut down when the last one closes."""

    def __init__(self, smi: Any, users: int) -> None:
        self.smi, self.users = smi, users

    def release(self) -> None:
        self.users -= 1
        if self.users == 0:
            with contextlib.suppress(self.smi.AmdSmiException):
                self.smi.amdsmi_shut_down()


class AmdSmiSource:
    kind = "amdsmi"

    def __init__(
        self, session: _Session, index: int, handle: Any, clock: Callable[[], float] = time.monotonic
    ) -> None:
        smi = session.smi
        self.session, self.smi, self.handle, self.clock, self.open = session, smi, handle, clock, True
        try:
            name = smi.amdsmi_get_gpu_asic_info(handle).get("market_name") or "AMD GPU"
        except smi.AmdSmiException:
            name = "AMD GPU"
        self.device = f"{index}: {name}"
        self.calls: dict[str, Callable[[], Any]] = {
            FIGURE.power_w: lambda: _first(smi.amdsmi_get_power_info(handle), POWER_FIELDS),
            FIGURE.energy_j: self._energy,
            FIGURE.utilisation_pct: lambda: smi.amdsmi_get_gpu_activity(handle)["gfx_activity"],
            FIGURE.memory_used_mb: lambda: (
                smi.amdsmi_get_gpu_memory_usage(handle, smi.AmdSmiMemoryType.VRAM) / 1e6
            ),
            FIGURE.temperature_c: lambda: smi.amdsmi_get_temp_metric(
                handle, smi.AmdSmiTemperatureType.EDGE, smi.AmdSmiTemperatureMetric.CURRENT
            ),
            "clock_gfx_mhz": lambda: _first(
                smi.amdsmi_get_clock_info(handle, smi.AmdSmiClkType.GFX), ("cur_clk", "clk")
            ),
        }

    def _energy(self) -> float | None:
        count = self.smi.amdsmi_get_energy_count(self.handle)
        raw = _first(count, ("energy_accumulator", "power"))
        resolution = _number(count.get("counter_resolution"))
        return None if raw is None or resolution is None else float(raw) * resolution * 1e-6

    def read(self) -> Reading:
        at = self.clock()
        values: dict[str, Any] = {}
        missing: dict[str, str] = {}
        for figure, call in self.calls.items():
            try:
                values[figure] = _number(call())
            except (self.smi.AmdSmiException, KeyError, TypeError) as exc:
                values[figure], missing[figure] = None, f"amdsmi: {exc}"
            if values[figure] is None:
                missing.setdefault(figure, "amdsmi answers N/A")
        if values[FIGURE.power_w] is None and values[FIGURE.energy_j] is None:
            raise TelemetryUnavailable(f"amdsmi {self.device}: no power and no energy ({missing['power_w']})")
        return make_reading(self.kind, self.device, at, values, missing)

    def close(self) -> None:
        if self.open:
            self.open = False
            self.session.release()


def open_sources(smi: Any = None, clock: Callable[[], float] = time.monotonic) -> tuple[list, str | None]:
    """A source for each GPU amdsmi lists, or no source and the one line why. ``smi``: the
    bindings module (default: ``import amdsmi``)."""
    smi = smi if smi is not None else _bindings()
    if smi is None:
        return [], NOT_INSTALLED
    try:
        smi.amdsmi_init()
        handles = smi.amdsmi_get_processor_handles()
    except smi.AmdSmiException as exc:
        return [], f"amdsmi: the library did not start: {exc}"
    if not handles:
        smi.amdsmi_shut_down()
        return [], "amdsmi: amdsmi lists no GPU"
    session = _Session(smi, len(handles))
    return [AmdSmiSource(session, i, h, clock) for i, h in enumerate(handles)], None
