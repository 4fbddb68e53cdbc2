"""What a telemetry source reads and what a level's readings add up to. Pure: the
readers in harness/energy/ make the ``Reading``s; this module only counts.

A ``Reading`` is one device read once: power (W), the device's own energy counter (J) where it has
one, utilisation (%), memory used (MB, 1 MB = 1e6 bytes), clocks (MHz, by name) and temperature
(degrees C). A figure the device does not give is None with its reason in ``missing`` (DGX
Spark's GB10 answers "Not Supported" for memory: a stated null, never a 0).

``Accumulator`` takes one source's readings as they come, in constant memory, and gives the same
energy as ``harness.energy.arithmetic.interval_energy`` over the whole list (a property test holds it to
that): the counter's steps with its wraps, the trapezoid over power, and the mean and max of each
gauge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from harness.energy import arithmetic as energy
from harness.energy.arithmetic import FIGURE, SPAN
from harness.schema_facts import KeyNames

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

FIGURES = (
    FIGURE.power_w,
    FIGURE.energy_j,
    FIGURE.utilisation_pct,
    FIGURE.memory_used_mb,
    FIGURE.temperature_c,
)
# The keys of a source's summary besides its figures and its span's (``Accumulator.summary``; the
# sampler adds ``partial``), and of the sampler's summary of a level or of the idle baseline.
SOURCE = KeyNames("source", "device", "readings", "label", "missing", "partial")
SAMPLED = KeyNames("interval_s", "sources", "seconds")


@dataclass(frozen=True)
class Reading:
    """One read of one device. ``at``: monotonic seconds (only differences mean anything).
    ``label``: "stand-in" or "imitation" where the figures are not a real device's."""

    source: str  # nvml, amdsmi, hwmon, rapl, powermetrics
    device: str  # "0: NVIDIA GB10", "card1", "package-0"
    at: float
    power_w: float | None = None
    energy_j: float | None = None
    energy_wrap_j: float | None = None  # where the counter starts again from 0 (RAPL), None: never
    utilisation_pct: float | None = None
    memory_used_mb: float | None = None
    temperature_c: float | None = None
    clocks_mhz: dict[str, float] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # figure -> why it is None
    label: str | None = None

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in ("source", "device", "at", *FIGURES)}
        out.update(clocks_mhz=dict(self.clocks_mhz), missing=dict(self.missing))
        if self.energy_wrap_j is not None:
            out["energy_wrap_j"] = self.energy_wrap_j
        if self.label:
            out["label"] = self.label
        return out


def bound(name: str) -> float:
    """The largest value a figure may have (``energy.BOUNDS``; every clock shares one)."""
    return energy.BOUNDS.get("clock_mhz" if name.startswith("clock_") else name, math.inf)


def usable(value: float | None, top: float = math.inf) -> float | None:
    """A device's figure if it is a finite number from 0 to ``top``, else None (a driver's -1, NaN
    or 1e300)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and 0 <= value <= top else None


def make_reading(
    source: str,
    device: str,
    at: float,
    values: dict[str, float | None],
    missing: dict[str, str],
    label: str | None = None,
    wrap_j: float | None = None,
) -> Reading:
    """A Reading from a reader's figures by name (``clock_<name>_mhz`` for each clock). A figure
    that is not a finite number at least 0 (a driver's -1, NaN) is None with what it said; a
    figure that is None keeps the reader's reason, or "not read" without one: every None figure
    of a Reading has its reason in ``missing``."""
    kept: dict[str, float] = {}
    why = dict(missing)
    for name, value in values.items():
        good = usable(value, bound(name))
        if good is not None:
            kept[name] = good
        elif usable(value) is not None:
            why[name] = f"the device answered {value!r}, past {bound(name):g} (no device's figure)"
        elif value is not None:
            why[name] = f"the device answered {value!r}"
        else:
            why.setdefault(name, "not read")
    why = {n: r for n, r in why.items() if n not in kept}
    why.update({n: "not read" for n in FIGURES if n not in kept and n not in why})
    clocks = {n[6:-4]: kept.pop(n) for n in sorted(kept) if n.startswith("clock_") and n.endswith("_mhz")}
    figures = {n: kept.get(n) for n in FIGURES}
    return Reading(
        source, device, at, energy_wrap_j=wrap_j, clocks_mhz=clocks, missing=why, label=label, **figures
    )


class _Gauge:
    """Mean and max of one figure's readings."""

    def __init__(self) -> None:
        self.n, self.total, self.top = 0, 0.0, -math.inf

    def add(self, value: float) -> None:
        self.n, self.total, self.top = self.n + 1, self.total + value, max(self.top, value)

    def summary(self) -> dict:
        return {"mean": round(self.total / self.n, 3), "max": round(self.top, 3)}


class Accumulator:
    """One source's readings over a level, added one at a time (constant memory)."""

    def __init__(self) -> None:
        self.readings = 0
        self.first_at: float | None = None
        self.last_at: float | None = None
        self.counter_j = 0.0  # the counter's steps added up, wraps included
        self.counter_ok = True  # every reading had a counter and every step was energy
        self.counter_fault: str | None = None  # why a step was no energy (a reset, a jump)
        self._last_counter: float | None = None
        self.integrated_j = 0.0
        self._last_power: tuple[float, float] | None = None  # (at, W)
        self.first_power_at: float | None = None
        self.power_readings = 0
        self.gauges: dict[str, _Gauge] = {}
        self.missing: dict[str, str] = {}
        self.source = self.device = ""
        self.label: str | None = None

    def _gauge(self, name: str, value: float | None) -> None:
        if value is not None:
            self.gauges.setdefault(name, _Gauge()).add(value)

    def _counter(self, r: Reading) -> None:
        if r.energy_j is None:
            said = r.missing.get(FIGURE.energy_j, "not read")
            if self._last_counter is not None or said.startswith("the device answered"):
                self.counter_fault = f"the device's energy counter gave no figure ({said})"
            self.counter_ok = False
            return
        if self._last_counter is not None:
            seconds = r.at - self.last_at  # type: ignore[operator]
            step, fault = energy.step_energy(self._last_counter, r.energy_j, seconds, r.energy_wrap_j)
            if step is None:
                self.counter_ok, self.counter_fault = False, fault
            else:
                self.counter_j += step
        self._last_counter = r.energy_j

    def add(self, r: Reading) -> None:
        """Take one reading; readings must come in time order (ValueError otherwise)."""
        if self.last_at is not None and r.at < self.last_at:
            raise ValueError("reading times go backwards")
        if self.counter_ok:
            self._counter(r)
        self.readings += 1
        self.first_at = r.at if self.first_at is None else self.first_at
        self.last_at = r.at
        self.source, self.device, self.label = r.source, r.device, r.label or self.label
        if r.power_w is not None:
            if self._last_power is not None:
                times, watts = [self._last_power[0], r.at], [self._last_power[1], r.power_w]
                self.integrated_j += energy.integrated_energy(times, watts) or 0.0
            else:
                self.first_power_at = r.at
            self._last_power = (r.at, r.power_w)
            self.power_readings += 1
        for name in ("power_w", "utilisation_pct", "memory_used_mb", "temperature_c"):
            self._gauge(name, getattr(r, name))
        for name, mhz in r.clocks_mhz.items():
            self._gauge(f"clock_{name}_mhz", mhz)
        self.missing.update(r.missing)

    def energy(self) -> energy.Energy:
        """As ``interval_energy`` over every reading added."""
        seconds = self.last_at - self.first_at if self.readings >= 2 else None  # type: ignore[operator]
        fault = self.counter_fault
        if self.readings >= 2 and self.counter_ok:
            fault = energy.past_bound(self.counter_j, seconds)  # type: ignore[arg-type]
            if fault is None:
                return energy.Energy(self.counter_j, seconds, energy.COUNTER)
        if self._last_power is None or self.power_readings < 2:
            return energy.fallback(None, seconds, None, fault)
        span = self._last_power[0] - self.first_power_at  # type: ignore[operator]
        return energy.fallback(self.integrated_j, seconds, span, fault)

    def summary(self) -> dict:
        """The level's figures for this source, in the shape a level record will carry."""
        out: dict = {SOURCE.source: self.source, SOURCE.device: self.device, SOURCE.readings: self.readings}
        if self.label:
            out[SOURCE.label] = self.label
        out.update(self.energy().to_dict())
        out.update({name: g.summary() for name, g in sorted(self.gauges.items())})
        found = {FIGURE.energy_j} if out.get(SPAN.energy_j) is not None else set()
        out[SOURCE.missing] = {
            k: v for k, v in sorted(self.missing.items()) if k not in self.gauges and k not in found
        }
        return out


def level_energy(
    joules: float | None,
    seconds: float | None,
    output_tokens: int | None,
    requests: int | None,
    idle_w: float | None = None,
    subtract_idle: bool = False,
) -> dict:
    """A level's energy figures from its energy and wall clock: mean power, J per output token, J
    per request and output tokens per J. The idle baseline (W) is shown beside and taken off only
    when ``subtract_idle``; then ``net`` says so and the per-unit figures are of the net energy."""
    out: dict = {
        SPAN.energy_j: joules,
        SPAN.seconds: seconds,
        SPAN.mean_power_w: energy.mean_power(joules, seconds),
    }
    used = joules
    if idle_w is not None:
        out["idle_power_w"] = idle_w
        if subtract_idle and joules is not None and seconds is not None:
            used = energy.net_of_baseline(joules, seconds, idle_w)
            out["net_energy_j"] = used
            if used <= 0:
                out[SPAN.reason] = "the level drew no more than the idle baseline; no per-token figure"
    out["subtracted_idle"] = bool(subtract_idle and idle_w is not None)
    out["j_per_output_token"] = energy.per_unit(used, output_tokens)
    out["j_per_request"] = energy.per_unit(used, requests)
    out["output_tokens_per_j"] = energy.units_per_joule(output_tokens, used)
    return out


def summary_lines(summary: dict | None) -> list[str]:
    """One line per source of a sampler's summary: its mean power and method, over how many
    readings (``harness telemetry``'s answer)."""
    out = []
    for source in (summary or {}).get(SAMPLED.sources, []):
        power = source.get(SPAN.mean_power_w)
        watts = "no power figure" if power is None else f"{power:.1f} W ({source[SPAN.method]})"
        label = f" [{source[SOURCE.label]}]" if source.get(SOURCE.label) else ""
        where = f"{source[SOURCE.source]} {source[SOURCE.device]}{label}"
        out.append(f"{where}: {watts} over {source[SOURCE.readings]} readings")
    return out
