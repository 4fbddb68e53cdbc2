"""Apple silicon through macOS's ``powermetrics``: the command line that asks it for one sample
as a property list, and the parser of that output. ``powermetrics`` needs root. Where the harness
is given the host-side shim (``HARNESS_SHIM_URL``, harness/endpoints/shim_host.py), each sample comes
from the shim's ``GET /v1/power``, which runs it on the shim's host when its allow-list names it
and it runs as root (a harness in a container, or as a user, on a Mac); else it runs here, only
where this process is root on macOS.

What a sample gives (the options are ``man powermetrics``'s; the keys are those its property-list
output carries for the samplers ``cpu_power`` and ``gpu_power``, not listed in the manual):

- ``elapsed_ns``: the sample's window; ``thermal_pressure``: Nominal, Light, ... (no degrees);
- ``processor``: ``cpu_power``, ``gpu_power``, ``ane_power`` and ``combined_power`` (their sum),
  mean milliwatts over the window, and ``cpu_energy``/``gpu_energy``/``ane_energy``, millijoules
  over the window (older macOS gives only these);
- ``gpu``: ``freq_hz`` (the active frequency; on Apple silicon the figure is MHz despite the
  name: the text output prints the same number as "GPU HW active frequency: 1398 MHz") and
  ``idle_ratio`` (the GPU's active residency is 1 - idle_ratio).

Several samples (``-n 2`` or more) come as several property lists, each ended by a NUL byte.
Power is the mean over the window, so a reading is stamped at the window's middle. There is no
running energy counter (each window's energy is its own), so a level's energy is its power
readings integrated."""

from __future__ import annotations

import os
import platform
import plistlib
import shutil
import subprocess
import time
from typing import Any, Callable
from xml.parsers.expat import ExpatError

from harness.energy.arithmetic import FIGURE
from harness.energy.readings import Reading, make_reading
from harness.bounds import Bounds
from harness.errors import ConfigError, TargetError, TelemetryUnavailable
from harness.endpoints import http_client as http, shim_host

MAX_OUTPUT = 1 << 20  # one sample of two samplers is a few kB
NOT_GIVEN = {
    FIGURE.energy_j: "powermetrics gives power over each window, not a running counter",
    FIGURE.memory_used_mb: "powermetrics gives no memory figure (unified memory: see the memory snapshot)",
}


def command(interval_ms: int = 500, samples: int = 1) -> list[str]:
    """The argument list for ``samples`` samples of ``interval_ms`` each, as property lists."""
    if interval_ms < 1 or samples < 1:
        raise ValueError("powermetrics needs an interval of at least 1 ms and at least one sample")
    return [
        "powermetrics",
        "--samplers",
        "cpu_power,gpu_power",
        "--sample-rate",
        str(interval_ms),
        "--sample-count",
        str(samples),
        "--format",
        "plist",
    ]


def parse(data: bytes) -> list[dict]:
    """Each sample in ``powermetrics --format plist`` output (NUL-separated property lists).
    ValueError for output that is no property list of a dict, or past ``MAX_OUTPUT`` bytes."""
    if len(data) > MAX_OUTPUT:
        raise ValueError(f"powermetrics output of {len(data)} bytes, past {MAX_OUTPUT}")
    samples = []
    for chunk in data.split(b"\0"):
        if not chunk.strip():
            continue
        try:
            sample = plistlib.loads(chunk.strip())
        except (plistlib.InvalidFileException, ExpatError, ValueError) as exc:
            raise ValueError(f"powermetrics output is no property list: {exc}") from exc
        if not isinstance(sample, dict):
            raise ValueError("a powermetrics sample is no dictionary")
        samples.append(sample)
    return samples


def _num(d: dict, key: str) -> float | None:
    value = d.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _power_mw(processor: dict, seconds: float | None) -> float | None:
    """combined_power, else the sum of the parts' power, else the parts' energy over the window."""
    combined = _num(processor, "combined_power")
    if combined is not None:
        return combined
    parts = [_num(processor, f"{p}_power") for p in ("cpu", "gpu", "ane")]
    if any(p is not None for p in parts):
        return sum(p for p in parts if p is not None)
    energies = [_num(processor, f"{p}_energy") for p in ("cpu", "gpu", "ane")]
    if seconds and any(e is not None for e in energies):
        return sum(e for e in energies if e is not None) / seconds
    return None


def reading(sample: dict, end: float, device: str = "Apple silicon") -> Reading:
    """One sample as a Reading, stamped at its window's middle (``end``: when the window ended)."""
    processor = sample.get("processor") if isinstance(sample.get("processor"), dict) else {}
    gpu = sample.get("gpu") if isinstance(sample.get("gpu"), dict) else {}
    elapsed = _num(sample, "elapsed_ns")
    seconds = elapsed / 1e9 if elapsed else None
    power = _power_mw(processor, seconds)
    idle = _num(gpu, "idle_ratio")
    freq = _num(gpu, "freq_hz")
    values: dict[str, Any] = {
        FIGURE.power_w: None if power is None else power / 1000,
        FIGURE.utilisation_pct: None if idle is None else min(100.0, max(0.0, (1 - idle) * 100)),
        "clock_gpu_mhz": None if freq is None else (freq / 1e6 if freq > 1e5 else freq),
        FIGURE.energy_j: None,
        FIGURE.memory_used_mb: None,
        FIGURE.temperature_c: None,
    }
    pressure = sample.get("thermal_pressure")
    missing = {
        **NOT_GIVEN,
        FIGURE.temperature_c: f"powermetrics gives thermal pressure only ({pressure or 'not given'})",
        FIGURE.power_w: "the sample has no processor power",
        FIGURE.utilisation_pct: "the sample has no gpu idle_ratio",
        "clock_gpu_mhz": "the sample has no gpu freq_hz",
    }
    at = end - seconds / 2 if seconds else end
    return make_reading("powermetrics", str(sample.get("hw_model") or device), at, values, missing)


def _run_here(argv: list[str]) -> bytes | None:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


class PowermetricsSource:
    kind = "powermetrics"

    def __init__(
        self,
        run: Callable[[list[str]], bytes | None],
        interval_ms: int = 500,
        clock: Callable[[], float] = time.monotonic,
        device: str = "Apple silicon",
    ) -> None:
        self.run, self.argv, self.clock, self.device = run, command(interval_ms, 1), clock, device

    def read(self) -> Reading:
        out = self.run(self.argv)
        end = self.clock()
        if not out:
            raise TelemetryUnavailable("powermetrics: no output (it needs root)")
        try:
            samples = parse(out)
        except ValueError as exc:
            raise TelemetryUnavailable(f"powermetrics: {exc}") from exc
        if not samples:
            raise TelemetryUnavailable("powermetrics: the output held no sample")
        return reading(samples[-1], end, self.device)

    def close(self) -> None:
        pass


def shim_sample(url: str, interval_ms: int) -> bytes:
    """One powermetrics sample of an ``interval_ms`` window from the shim's ``GET /v1/power``: the
    property-list output it ran. TelemetryUnavailable, one line, with the shim's reason when it
    refuses (not allow-listed, not root), when it does not answer, or without its token."""
    url = url.rstrip("/")
    try:
        headers = shim_host.auth()
    except ConfigError as exc:
        raise TelemetryUnavailable(f"powermetrics: {exc}") from None
    try:
        bounds = Bounds.of(interval_ms / 1000 + 30)
        reply = http.request("GET", f"{url}/v1/power?interval_ms={interval_ms}", bounds, None, headers)
        answer = reply.json()
    except (TargetError, ValueError) as exc:
        raise TelemetryUnavailable(
            f"powermetrics: the shim at {url} did not answer /v1/power ({exc}); is it running? (make shim)"
        ) from None
    answer = answer if isinstance(answer, dict) else {}
    if reply.status != 200 or not isinstance(answer.get("output"), str):
        why = str(answer.get("error") or "no sample in its answer").splitlines()[0][:300]
        raise TelemetryUnavailable(f"powermetrics: the shim at {url} answered HTTP {reply.status}: {why}")
    return answer["output"].encode("utf-8")


def through_shim(url: str) -> Callable[[list[str]], bytes]:
    """A runner that asks the shim at ``url`` for the sample ``command()`` describes: the shim runs
    its own, identical argument list with the window (``--sample-rate``) asked for."""

    def run(argv: list[str]) -> bytes:
        return shim_sample(url, int(argv[argv.index("--sample-rate") + 1]))

    return run


PROBE_MS = 100  # the shim is asked once, briefly, when the source opens: a refusal is said then


def _open_through_shim(url: str, clock: Callable[[], float]) -> tuple[list, str | None]:
    run = through_shim(url)
    try:
        if not parse(run(command(PROBE_MS, 1))):
            return [], f"powermetrics: the shim at {url} answered no sample"
    except TelemetryUnavailable as exc:
        return [], str(exc)
    except ValueError as exc:
        return [], f"powermetrics: the shim at {url} answered: {exc}"
    return [PowermetricsSource(run, clock=clock, device="Apple silicon (the shim's host)")], None


def open_sources(
    run: Callable[[list[str]], bytes | None] | None = None,
    system: str | None = None,
    is_root: bool | None = None,
    clock: Callable[[], float] = time.monotonic,
    shim_url: str | None = None,
) -> tuple[list, str | None]:
    """The Mac's source, or none and the one line why. ``run`` answers an argument list's output;
    without it the shim at ``shim_url`` is asked (once now, so that its refusal is said at the
    start), and without a shim powermetrics runs here, which needs macOS and root."""
    if run is None and shim_url:
        return _open_through_shim(shim_url, clock)
    if run is None:
        system = system or platform.system()
        if system != "Darwin":
            return [], (
                f"powermetrics: macOS only (this is {system}); a harness in a container on a Mac reads "
                "it through the host-side shim (HARNESS_SHIM_URL; docs/telemetry.md)"
            )
        if not (os.geteuid() == 0 if is_root is None else is_root):
            return [], (
                "powermetrics: needs root; run the harness as root, or start the host-side shim as root "
                "with powermetrics allowed (sudo make shim SHIM_POWERMETRICS=1) and set HARNESS_SHIM_URL"
            )
        if not shutil.which("powermetrics"):
            return [], "powermetrics: not on PATH"
        run = _run_here
    return [PowermetricsSource(run, clock=clock)], None
