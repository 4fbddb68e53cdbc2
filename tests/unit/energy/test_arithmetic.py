"""The energy arithmetic (harness/energy/arithmetic.py) and a level's readings added up
(harness/energy/readings.py): hand-computed figures, then properties: a wrapped counter gives the
energy of the unwrapped one, energy is never below 0 and grows as readings are added, the
streaming accumulator equals the whole-list answer, and non-finite figures are refused."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.energy import arithmetic as energy
from harness.energy.readings import Accumulator, Reading, level_energy, make_reading
from harness.errors import ConfigError
from tests.unit.properties import examples


def test_a_counter_without_a_wrap_is_last_minus_first():
    assert energy.counter_energy([100.0, 160.0, 250.0]) == 150.0
    assert energy.counter_energy([100.0]) is None  # one reading spans no time


def test_a_counter_that_wraps_adds_its_range_once_per_wrap():
    # RAPL at max_energy_range_uj = 262143.328850 J: 262000 -> 100 is 243.33 J, not -261900
    wrap = 262143.328850
    assert energy.counter_energy([261900.0, 262000.0, 100.0, 300.0], wrap) == pytest.approx(543.32885)


def test_a_counter_that_goes_back_with_no_range_is_a_reset_not_energy():
    assert energy.counter_steps([500.0, 520.0, 3.0]) is None
    found = energy.interval_energy([0.0, 1.0, 2.0], [100.0, 100.0, 120.0], [500.0, 520.0, 3.0])
    assert found.method == energy.INTEGRATED and found.joules == 210.0
    assert "reset" in found.reason


def test_power_is_integrated_by_the_trapezoid_over_unequal_gaps():
    # 0-1 s at 100 -> 200 W: 150 J; 1-4 s at 200 -> 50 W: 375 J
    assert energy.integrated_energy([0.0, 1.0, 4.0], [100.0, 200.0, 50.0]) == 525.0
    found = energy.interval_energy([0.0, 1.0, 4.0], [100.0, None, 50.0])
    assert (found.joules, found.seconds, found.method) == (300.0, 4.0, energy.INTEGRATED)
    assert found.mean_power_w == 75.0


def test_the_counter_wins_where_every_reading_has_one():
    found = energy.interval_energy([0.0, 2.0], [300.0, 300.0], [1000.0, 1420.0])
    assert (found.joules, found.method, found.mean_power_w) == (420.0, energy.COUNTER, 210.0)


def test_no_figure_without_two_power_readings_or_a_counter():
    found = energy.interval_energy([0.0, 1.0], [None, 5.0])
    assert found.joules is None and found.method is None and "fewer than two" in found.reason


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_figures_are_refused(bad):
    with pytest.raises(ValueError):
        energy.counter_energy([1.0, bad])
    with pytest.raises(ValueError):
        energy.integrated_energy([0.0, 1.0], [1.0, bad])
    with pytest.raises(ValueError):
        energy.integrated_energy([0.0, bad], [1.0, 1.0])
    with pytest.raises(ValueError):
        energy.counter_energy([1.0, 2.0], bad)


def test_times_going_back_and_negative_power_are_refused():
    with pytest.raises(ValueError, match="backwards"):
        energy.integrated_energy([1.0, 0.5], [10.0, 10.0])
    with pytest.raises(ValueError, match="below 0"):
        energy.integrated_energy([0.0, 1.0], [10.0, -1.0])
    with pytest.raises(ValueError, match="outside"):
        energy.counter_energy([10.0, 300.0], wrap=262.0)


def test_per_token_per_request_and_tokens_per_joule():
    level = level_energy(joules=900.0, seconds=10.0, output_tokens=1000, requests=20)
    assert level["mean_power_w"] == 90.0 and level["j_per_output_token"] == 0.9
    assert level["j_per_request"] == 45.0 and level["output_tokens_per_j"] == pytest.approx(1000 / 900)
    assert level["subtracted_idle"] is False


def test_the_idle_baseline_is_shown_and_taken_off_only_when_asked():
    shown = level_energy(900.0, 10.0, 1000, 20, idle_w=30.0)
    assert (
        shown["idle_power_w"] == 30.0 and shown["j_per_output_token"] == 0.9 and "net_energy_j" not in shown
    )
    net = level_energy(900.0, 10.0, 1000, 20, idle_w=30.0, subtract_idle=True)
    assert net["net_energy_j"] == 600.0 and net["j_per_output_token"] == 0.6 and net["subtracted_idle"]
    under = level_energy(200.0, 10.0, 1000, 20, idle_w=30.0, subtract_idle=True)
    assert (
        under["net_energy_j"] == -100.0 and under["j_per_output_token"] is None and "idle" in under["reason"]
    )


def test_a_level_without_tokens_or_energy_has_no_per_unit_figure():
    assert level_energy(900.0, 10.0, 0, 0)["j_per_output_token"] is None
    empty = level_energy(None, 10.0, 1000, 20)
    assert empty["mean_power_w"] is None and empty["output_tokens_per_j"] is None


def test_cost_per_million_output_tokens_from_either_price():
    hourly = energy.cost_per_million_tokens(36000, seconds=60.0, price_per_hour=2.4)
    assert hourly["basis"] == "per-hour" and hourly["cost"] == pytest.approx(2.4 / 60 / 36000 * 1e6)
    # 3.6 MJ is 1 kWh: at 0.30 a kWh for 1e6 tokens, 0.30
    per_kwh = energy.cost_per_million_tokens(1_000_000, joules=3.6e6, price_per_kwh=0.30)
    assert per_kwh["cost"] == pytest.approx(0.30)
    assert energy.cost_per_million_tokens(1000, seconds=1.0) is None
    assert (
        energy.cost_per_million_tokens(1000, price_per_kwh=0.3)["reason"]
        == "no energy measured at this level"
    )
    assert energy.cost_per_million_tokens(0, 1.0, price_per_hour=1.0)["cost"] is None
    # a price of 1e308 a level's record refused (inf), and a cost past 1e15 the notebook skips:
    # the price is bounded and a cost past any real one is no figure, the level kept
    absurd = energy.cost_per_million_tokens(1, joules=1e18, price_per_kwh=1e6)
    assert absurd["cost"] is None and "no level's real cost" in absurd["reason"]


@pytest.mark.parametrize(
    "hour, kwh, words",
    [(1.0, 0.2, "not both"), (-1.0, None, "--price-per-hour"), (None, math.nan, "--price-per-kwh"),
     (1e308, None, "--price-per-hour must be a number from 0 to 1,000,000"), (None, math.inf, "kwh")],
)  # fmt: skip
def test_a_bad_price_is_a_config_error(hour, kwh, words):
    with pytest.raises(ConfigError, match=words):
        energy.check_price(hour, kwh)


def test_a_reading_keeps_no_made_up_figure():
    r = make_reading(
        "nvml", "0: x", 1.0, {"power_w": -1, "temperature_c": math.nan, "clock_sm_mhz": 1980}, {}
    )
    assert r.power_w is None and r.missing["power_w"] == "the device answered -1"
    assert r.temperature_c is None and r.clocks_mhz == {"sm": 1980.0}
    assert r.missing["memory_used_mb"] == "not read"


def test_the_accumulator_summary_states_its_method_and_missing_figures():
    acc = Accumulator()
    for at, watts in ((0.0, 100.0), (1.0, 200.0), (2.0, 200.0)):
        acc.add(make_reading("hwmon", "card1", at, {"power_w": watts}, {"memory_used_mb": "amdgpu: absent"}))
    summary = acc.summary()
    assert summary["method"] == energy.INTEGRATED and summary["energy_j"] == 350.0
    assert summary["mean_power_w"] == 175.0 and summary["power_w"] == {"mean": 166.667, "max": 200.0}
    assert summary["missing"]["memory_used_mb"] == "amdgpu: absent"


# -- properties -----------------------------------------------------------------------------------

STEPS = st.lists(st.floats(min_value=0, max_value=5e4, allow_nan=False), min_size=1, max_size=40)


@settings(max_examples=examples(200))
@given(STEPS, st.floats(min_value=1e3, max_value=1e6), st.floats(min_value=0, max_value=0.999))
def test_a_wrapped_counter_gives_the_unwrapped_energy(steps, wrap, start_share):
    """Readings of a counter that runs true from ``start`` (each step under the range) and the
    same readings taken modulo the range give the same energy."""
    steps = [s % wrap for s in steps]
    true = [start_share * wrap]
    for s in steps:
        true.append(true[-1] + s)
    wrapped = [v % wrap for v in true]
    assert energy.counter_energy(wrapped, wrap) == pytest.approx(true[-1] - true[0], rel=1e-9, abs=1e-6)


@settings(max_examples=examples(200))
@given(st.lists(st.tuples(st.floats(0, 100), st.floats(0, 2000)), min_size=2, max_size=40))
def test_integrated_energy_is_never_below_zero_and_grows_with_each_reading(gaps_and_watts):
    times, watts, t = [], [], 0.0
    for gap, w in gaps_and_watts:
        t += gap
        times.append(t)
        watts.append(w)
    totals = [energy.integrated_energy(times[:n], watts[:n]) for n in range(2, len(times) + 1)]
    assert all(j is not None and j >= 0 for j in totals)
    assert all(b >= a - 1e-9 for a, b in zip(totals, totals[1:], strict=False))
    assert totals[-1] <= max(watts) * (times[-1] - times[0]) + 1e-6  # never past the peak over the span


READING = st.tuples(
    st.floats(0, 10),  # gap (s)
    st.one_of(st.none(), st.floats(0, 1000)),  # power (W)
    st.one_of(st.none(), st.floats(0, 1e5)),  # counter step (J)
)


@settings(max_examples=examples(200))
@given(st.lists(READING, min_size=1, max_size=30), st.booleans())
def test_the_accumulator_equals_the_whole_list(readings, every_counter):
    """Added one at a time in constant memory, the energy is interval_energy's over the list."""
    times, watts, counter, t, c = [], [], [], 0.0, 1e6
    acc = Accumulator()
    for gap, w, step in readings:
        t, c = t + gap, c + (step or 0.0)
        value = c if every_counter or step is not None else None
        times.append(t)
        watts.append(w)
        counter.append(value)
        acc.add(Reading("rapl", "package-0", t, power_w=w, energy_j=value))
    whole = energy.interval_energy(times, watts, counter)
    mine = acc.energy()
    assert mine.method == whole.method
    assert (mine.joules is None) == (whole.joules is None)
    if whole.joules is not None:
        assert mine.joules == pytest.approx(whole.joules, rel=1e-9, abs=1e-6)
        assert mine.seconds == pytest.approx(whole.seconds)


@settings(max_examples=examples(100))
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**6), 10**6)))
def test_a_reading_figure_is_a_finite_number_at_least_zero_or_a_stated_null(value):
    r = make_reading("nvml", "0", 0.0, {"power_w": value}, {})
    if r.power_w is None:
        assert "power_w" in r.missing
    else:
        assert math.isfinite(r.power_w) and r.power_w >= 0
