"""Energy arithmetic: joules over an interval, mean power, joules per output token and
per request, output tokens per joule, an idle baseline taken off only when asked, and the cost of
a million output tokens. Pure: numbers in, numbers out, no clocks and no devices.

Units: seconds, watts (W), joules (J); a device's counter is read as J (NVML's millijoules and
RAPL's microjoules are converted by their readers). Every result that cannot be computed is None
with a reason beside it, never a zero: a level with no output tokens has no J per token.

Energy over an interval comes from one of two methods, and the result says which:

- ``counter``: the device's own cumulative counter, last minus first; where the counter wraps
  (RAPL's ``energy_uj`` at ``max_energy_range_uj``) each step that goes down adds the range once.
  A step down without a known range is a reset (a driver reload), not energy: the counter is
  then refused and the power readings are integrated instead.
- ``power-integrated``: the trapezoid rule over (time, watts) readings, so unequal gaps weigh by
  their length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from harness.errors import ConfigError
from harness.schema_facts import KeyNames

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

COUNTER = "counter"
INTEGRATED = "power-integrated"
JOULES_PER_KWH = 3.6e6
MAX_PRICE = 1e6  # per hour or per kWh, in any currency: far above any machine's or any power's
MAX_COST = 1e12  # per million output tokens: past it the figure says the level was not a real one

# The keys of what the energy modules pass each other, each declared once here: a device's figures
# (a reading's, and ``BOUNDS``'s), an energy over a span (``Energy.to_dict``: a source's summary and
# a level's part carry them) and a level's price (``cost_per_million_tokens``).
FIGURE = KeyNames("power_w", "energy_j", "utilisation_pct", "memory_used_mb", "temperature_c", "clock_mhz")
SPAN = KeyNames("energy_j", "seconds", "method", "mean_power_w", "reason")
PRICED = KeyNames("basis", "price", "cost", "reason")

# What one device's figures may be, declared once: past a bound a figure is no device's (a driver's
# garbage, 1e300 W), so it is None with what the device said, and a counter step that implies more
# than ``power_w`` is a fault, not energy. One device, not a machine: 10 kW is above any
# accelerator, CPU package or Mac today (a GB200 board draws about 2.7 kW).
BOUNDS: dict[str, float] = {
    FIGURE.power_w: 10_000.0,
    FIGURE.energy_j: 1e15,  # a running counter: 10 kW for over 3,000 years
    FIGURE.utilisation_pct: 100.0,
    FIGURE.memory_used_mb: 1e9,  # a petabyte
    FIGURE.temperature_c: 250.0,
    FIGURE.clock_mhz: 100_000.0,
}
MAX_POWER_W = BOUNDS["power_w"]
# A counter is updated every few ms (RAPL, amdsmi) to tens of ms (NVML), so one step may hold that
# much energy read an instant after the last: a step or a span's counter energy is held to
# MAX_POWER_W over its seconds plus this.
COUNTER_SLACK_S = 1.0
RESET = "the device's energy counter went back (a reset)"


def _finite(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, got {value!r}")
    return float(value)


def counter_steps(values: Sequence[float], wrap: float | None = None) -> list[float] | None:
    """The energy between each pair of consecutive counter readings (J). A step down adds ``wrap``
    once (the counter passed its range; the step is then below the range, as one sample interval
    can only wrap once); a step down with no ``wrap`` is a reset and gives None (the counter says
    nothing about that interval). Non-finite values, a negative reading or a reading at or past
    ``wrap`` are refused (ValueError)."""
    if wrap is not None and _finite(wrap, "the counter's range") <= 0:
        raise ValueError(f"the counter's range must be above 0, got {wrap!r}")
    checked = [_finite(v, "a counter reading") for v in values]
    for v in checked:
        if v < 0 or (wrap is not None and v >= wrap):
            raise ValueError(f"counter reading {v!r} outside 0..{wrap if wrap is not None else 'inf'}")
    steps = []
    for before, after in zip(checked, checked[1:], strict=False):
        step = after - before
        if step < 0:
            if wrap is None:
                return None
            step += wrap
        steps.append(step)
    return steps


def step_energy(
    before: float, after: float, seconds: float, wrap: float | None = None
) -> tuple[float | None, str | None]:
    """One counter step's energy (J) and None, or None and why it is no energy: a reading that is
    not a finite number in 0..``wrap``, a step down with no ``wrap`` (a reset), or a step past
    ``MAX_POWER_W`` over its ``seconds`` (a counter that jumped)."""
    for v in (before, after):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            return None, f"the device's energy counter read {v!r}"
        if wrap is not None and v >= wrap:
            return None, f"the device's energy counter read {v!r}, past its range {wrap!r}"
    step = after - before
    if step < 0:
        if wrap is None:
            return None, RESET
        step += wrap
    why = past_bound(step, seconds, "stepped")
    return (None, why) if why else (step, None)


def past_bound(joules: float, seconds: float, verb: str = "gave") -> str | None:
    """Why a counter's ``joules`` over ``seconds`` is no device's (past MAX_POWER_W, with the
    counter's slack), or None when it is within the bound."""
    if joules <= MAX_POWER_W * (max(seconds, 0.0) + COUNTER_SLACK_S):
        return None
    return f"the device's energy counter {verb} {joules:.4g} J in {seconds:.4g} s, past {MAX_POWER_W:g} W"


def counter_energy(values: Sequence[float], wrap: float | None = None) -> float | None:
    """Energy from first to last counter reading (J), wraps added; None for fewer than two
    readings or a reset (see ``counter_steps``)."""
    steps = counter_steps(values, wrap)
    return math.fsum(steps) if steps is not None and len(values) >= 2 else None


def integrated_energy(times: Sequence[float], watts: Sequence[float]) -> float | None:
    """The trapezoid integral of power over time (J). None for fewer than two readings. Times must
    not go backwards; non-finite values and negative power are refused (ValueError)."""
    if len(times) != len(watts):
        raise ValueError(f"{len(times)} times but {len(watts)} power readings")
    ts = [_finite(t, "a reading's time") for t in times]
    ws = [_finite(w, "a power reading") for w in watts]
    if any(w < 0 for w in ws):
        raise ValueError("a power reading below 0 W")
    if any(b < a for a, b in zip(ts, ts[1:], strict=False)):
        raise ValueError("reading times go backwards")
    if len(ts) < 2:
        return None
    gaps = zip(ts, ts[1:], ws, ws[1:], strict=False)
    return math.fsum((t1 - t0) * (w0 + w1) / 2 for t0, t1, w0, w1 in gaps)


@dataclass(frozen=True)
class Energy:
    """Energy over an interval and how it was found. ``joules`` None: ``reason`` says why."""

    joules: float | None
    seconds: float | None
    method: str | None  # COUNTER, INTEGRATED or None
    reason: str | None = None

    @property
    def mean_power_w(self) -> float | None:
        return mean_power(self.joules, self.seconds)

    def to_dict(self) -> dict:
        out: dict = {SPAN.energy_j: self.joules, SPAN.seconds: self.seconds, SPAN.method: self.method}
        out[SPAN.mean_power_w] = self.mean_power_w
        if self.reason:
            out[SPAN.reason] = self.reason
        return out


def interval_energy(
    times: Sequence[float],
    watts: Sequence[float | None],
    counter: Sequence[float | None] = (),
    wrap: float | None = None,
) -> Energy:
    """Energy over the readings' span: the device's counter where every reading has one and it
    never reset, else the power readings integrated (the readings without power left out)."""
    seconds = times[-1] - times[0] if len(times) >= 2 else None
    fault = None
    if len(counter) == len(times) and len(times) >= 2 and all(c is not None for c in counter):
        steps = [
            step_energy(c0, c1, t1 - t0, wrap)  # type: ignore[arg-type]
            for t0, t1, c0, c1 in zip(times, times[1:], counter, counter[1:], strict=False)
        ]
        fault = next((why for _, why in steps if why), None)
        if fault is None:
            total = math.fsum(j for j, _ in steps if j is not None)
            fault = past_bound(total, seconds)  # type: ignore[arg-type]
            if fault is None:
                return Energy(total, seconds, COUNTER)
    pairs = [(t, w) for t, w in zip(times, watts, strict=True) if w is not None]
    joules = integrated_energy([t for t, _ in pairs], [w for _, w in pairs])
    return fallback(joules, seconds, pairs[-1][0] - pairs[0][0] if pairs else None, fault)


def fallback(joules: float | None, seconds: float | None, span: float | None, fault: str | None) -> Energy:
    """The energy of the power readings integrated, where the counter is absent or faulted."""
    if joules is None:
        why = "fewer than two power readings and no energy counter"
        return Energy(None, seconds, None, f"{fault}; {why}" if fault else why)
    return Energy(joules, span, INTEGRATED, f"{fault}; power integrated instead" if fault else None)


def mean_power(joules: float | None, seconds: float | None) -> float | None:
    """Mean power (W) = energy / time; None without either or over no time."""
    if joules is None or seconds is None or seconds <= 0:
        return None
    return joules / seconds


def net_of_baseline(joules: float, seconds: float, idle_w: float) -> float:
    """Energy above an idle baseline (J): joules - idle watts x seconds. May be below 0 when the
    level drew less than the baseline (a noisy baseline); the caller says so, it is not clamped."""
    return _finite(joules, "energy") - _finite(idle_w, "the idle power") * _finite(seconds, "the time")


def per_unit(joules: float | None, count: float | None) -> float | None:
    """Joules per unit (an output token, a request); None without energy, without units, or for
    energy at or below 0 (nothing to share out)."""
    if joules is None or not count or count <= 0 or joules <= 0:
        return None
    return joules / count


def units_per_joule(count: float | None, joules: float | None) -> float | None:
    """Units per joule (output tokens per J); None without energy or for energy at or below 0."""
    if joules is None or joules <= 0 or count is None or count < 0:
        return None
    return count / joules


def check_price(price_per_hour: float | None, price_per_kwh: float | None) -> None:
    """One price at most, finite and at least 0 (ConfigError, said as the flag)."""
    if price_per_hour is not None and price_per_kwh is not None:
        raise ConfigError("give --price-per-hour or --price-per-kwh, not both")
    for flag, price in (("--price-per-hour", price_per_hour), ("--price-per-kwh", price_per_kwh)):
        if price is None:
            continue
        if (
            isinstance(price, bool)
            or not isinstance(price, (int, float))
            or not math.isfinite(price)
            or not 0 <= price <= MAX_PRICE
        ):
            raise ConfigError(f"{flag} must be a number from 0 to {MAX_PRICE:,.0f}, got {price!r}")


def cost_per_million_tokens(
    output_tokens: float | None,
    seconds: float | None = None,
    joules: float | None = None,
    price_per_hour: float | None = None,
    price_per_kwh: float | None = None,
) -> dict | None:
    """The cost of a million output tokens at a level: from a price per hour of the machine
    (price x hours of the level / tokens x 1e6) or from a price per kWh (price x kWh the level
    drew / tokens x 1e6). None when no price is given; a dict with ``cost`` None and a reason when
    the level lacks what the price needs (time, energy or tokens)."""
    check_price(price_per_hour, price_per_kwh)
    if price_per_hour is None and price_per_kwh is None:
        return None
    basis = "per-hour" if price_per_hour is not None else "per-kwh"
    price = float(price_per_hour if price_per_hour is not None else price_per_kwh)  # type: ignore[arg-type]
    out: dict = {PRICED.basis: basis, PRICED.price: price, PRICED.cost: None}
    if not output_tokens or output_tokens <= 0:
        out[PRICED.reason] = "no output tokens at this level"
    elif basis == "per-hour":
        if seconds is None or seconds <= 0:
            out[PRICED.reason] = "the level has no wall-clock time"
        else:
            out[PRICED.cost] = price * seconds / 3600 / output_tokens * 1e6
    elif joules is None or joules < 0:
        out[PRICED.reason] = "no energy measured at this level"
    else:
        out[PRICED.cost] = price * joules / JOULES_PER_KWH / output_tokens * 1e6
    cost = out[PRICED.cost]
    if cost is not None and not cost <= MAX_COST:  # a level's record is never lost to it
        out.update(
            {PRICED.cost: None, PRICED.reason: f"past {MAX_COST:g} a million tokens: no level's real cost"}
        )
    return out
