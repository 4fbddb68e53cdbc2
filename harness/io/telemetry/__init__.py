"""Energy and the accelerator's own readings: one module per source, one interface.

    detect(spec, where) -> Detection     which sources read this machine; one line for each absent
    Source.read() -> Reading             one device read once (harness.core.telemetry.Reading)
    TelemetrySampler(sources, interval)  every source read off the load loop while a level runs
    idle_baseline(sources, seconds)      a short reading before the first level

Sources: ``nvml`` (nvidia-ml-py), ``amdsmi`` (AMD's bindings), ``hwmon`` (amdgpu's sysfs files),
``rapl`` (powercap), ``powermetrics`` (Apple silicon). The arithmetic is harness.core.energy's."""

from harness.io.telemetry.detect import KINDS, WORDS, Detection, Where, detect, parse_spec
from harness.io.telemetry.sampler import DEFAULT_INTERVAL, TelemetrySampler, idle_baseline

__all__ = [
    "DEFAULT_INTERVAL",
    "KINDS",
    "WORDS",
    "Detection",
    "TelemetrySampler",
    "Where",
    "detect",
    "idle_baseline",
    "parse_spec",
]
