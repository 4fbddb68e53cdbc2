"""NVIDIA GPUs (and DGX Spark's GB10) through NVML, with NVIDIA's own bindings ``nvidia-ml-py``
(``import pynvml``), which load ``libnvidia-ml.so.1`` from the driver. Per device:

- power: ``nvmlDeviceGetPowerUsage`` (milliwatts);
- energy: ``nvmlDeviceGetTotalEnergyConsumption`` (millijoules since the driver loaded, Volta and
  later), the counter a level's energy is taken from where it is there;
- utilisation: ``nvmlDeviceGetUtilizationRates().gpu`` (%); memory used:
  ``nvmlDeviceGetMemoryInfo().used`` (bytes; GB10 answers NVML_ERROR_NOT_SUPPORTED: a stated
  null); temperature: ``nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)``; clocks:
  ``nvmlDeviceGetClockInfo`` for SM and memory (MHz).

A figure NVML refuses is None with NVML's own words ("Not Supported", "Insufficient
Permissions"). Each source calls ``nvmlInit`` once and ``nvmlShutdown`` once at ``close`` (NVML
counts them). A device whose name says "stand-in" (the tests' library) is labelled so."""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable

from harness.energy.arithmetic import FIGURE
from harness.energy.readings import Reading, make_reading
from harness.errors import TelemetryUnavailable

NOT_INSTALLED = "nvml: nvidia-ml-py is not installed (pip install nvidia-ml-py)"


def _bindings() -> Any:
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class NvmlSource:
    kind = "nvml"

    def __init__(self, nv: Any, index: int, clock: Callable[[], float] = time.monotonic) -> None:
        nv.nvmlInit()
        try:
            self.handle = nv.nvmlDeviceGetHandleByIndex(index)
            name = _text(nv.nvmlDeviceGetName(self.handle))
        except nv.NVMLError:
            nv.nvmlShutdown()
            raise
        self.nv, self.clock, self.open = nv, clock, True
        self.device = f"{index}: {name}"
        self.label = "stand-in" if "stand-in" in name.lower() else None
        sm, mem = nv.NVML_CLOCK_SM, nv.NVML_CLOCK_MEM
        self.calls: dict[str, Callable[[], float]] = {
            FIGURE.power_w: lambda: nv.nvmlDeviceGetPowerUsage(self.handle) / 1000,
            FIGURE.energy_j: lambda: nv.nvmlDeviceGetTotalEnergyConsumption(self.handle) / 1000,
            FIGURE.utilisation_pct: lambda: nv.nvmlDeviceGetUtilizationRates(self.handle).gpu,
            FIGURE.memory_used_mb: lambda: nv.nvmlDeviceGetMemoryInfo(self.handle).used / 1e6,
            FIGURE.temperature_c: lambda: nv.nvmlDeviceGetTemperature(self.handle, nv.NVML_TEMPERATURE_GPU),
            "clock_sm_mhz": lambda: nv.nvmlDeviceGetClockInfo(self.handle, sm),
            "clock_mem_mhz": lambda: nv.nvmlDeviceGetClockInfo(self.handle, mem),
        }

    def read(self) -> Reading:
        at = self.clock()
        values: dict[str, float] = {}
        missing: dict[str, str] = {}
        for figure, call in self.calls.items():
            try:
                values[figure] = float(call())
            except self.nv.NVMLError as exc:
                missing[figure] = f"NVML: {exc}"
        if FIGURE.power_w not in values and FIGURE.energy_j not in values:
            raise TelemetryUnavailable(f"nvml {self.device}: no power and no energy ({missing['power_w']})")
        return make_reading(self.kind, self.device, at, values, missing, label=self.label)

    def close(self) -> None:
        if self.open:
            self.open = False
            with contextlib.suppress(self.nv.NVMLError):
                self.nv.nvmlShutdown()


def _why_not(nv: Any, exc: Exception) -> str:
    words = {
        getattr(nv, "NVML_ERROR_LIBRARY_NOT_FOUND", -1): "no NVIDIA driver library here (libnvidia-ml.so.1)",
        getattr(nv, "NVML_ERROR_DRIVER_NOT_LOADED", -1): "the NVIDIA driver is not loaded",
        getattr(nv, "NVML_ERROR_NO_PERMISSION", -1): "NVML refused this user (Insufficient Permissions)",
    }
    return "nvml: " + words.get(getattr(exc, "value", None), f"NVML failed to start: {exc}")


def open_sources(nv: Any = None, clock: Callable[[], float] = time.monotonic) -> tuple[list, str | None]:
    """A source for each device NVML lists, or no source and the one line why. ``nv``: the
    bindings module (default: ``import pynvml``)."""
    nv = nv if nv is not None else _bindings()
    if nv is None:
        return [], NOT_INSTALLED
    try:
        nv.nvmlInit()
    except nv.NVMLError as exc:
        return [], _why_not(nv, exc)
    sources: list[NvmlSource] = []
    try:
        for index in range(nv.nvmlDeviceGetCount()):
            sources.append(NvmlSource(nv, index, clock))
    except nv.NVMLError as exc:
        for source in sources:
            source.close()
        return [], f"nvml: listing the devices failed: {exc}"
    finally:
        nv.nvmlShutdown()
    return (sources, None) if sources else ([], "nvml: NVML lists no device")
