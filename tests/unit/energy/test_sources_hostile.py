"""The telemetry sources fed nonsense, by files and stand-in libraries these
tests make: counters that go backwards, wrap or leap, NaN, negative and 1e300 watts, a sysfs file
that vanishes mid-level, amdsmi and NVML-shaped calls that raise after the first reading, and
powermetrics output cut mid-plist. Each level is read by the real sampler and its record's
energy part made by the real ``energy_part``: the part is null with its reason, or uses the
readings before the fault, and never holds a negative or absurd joule figure (``BOUNDS``).

The stand-in NVML library (C, through pynvml) gets the same faults in
tests/integration/test_nvml_standin_hostile.py, with a sweep against the practice server."""

from __future__ import annotations

import itertools
import math
import shutil
from types import SimpleNamespace

import pytest

from harness.energy.arithmetic import BOUNDS, COUNTER, INTEGRATED, MAX_POWER_W
from harness.energy.readings import FIGURES
from harness.energy.record_part import energy_part
from harness.energy.sampler import TelemetrySampler
from harness.energy.sources import amd_smi, hwmon, nvml, powermetrics, practice, rapl
from harness.endpoints.http_client import Reply
from tests.conftest import FIXTURES
from tests.unit.energy.test_sources import AmdSmiException, fake_amdsmi
from tests.unit.energy.test_sources_sysfs import apu_tree, rapl_tree, write

PLIST = (FIXTURES / "telemetry" / "powermetrics-two-samples.plist").read_bytes()


def ticks(step: float = 0.5):
    """A clock of whole half-seconds: the tests know every reading's time."""
    counter = itertools.count()
    return lambda: next(counter) * step


def level(source, reads: int, between=None) -> dict:
    """``reads`` polls of one source as a level's sampler makes them (``between(i)`` runs before
    poll i, to change the files), then the record's energy part for 100 output tokens."""
    sampler = TelemetrySampler([source])
    for i in range(reads):
        if between:
            between(i)
        sampler.poll_once()
    part = energy_part(sampler.summary(), None, source.kind, {}, output_tokens=100, requests=4)
    assert_sane(part)
    return part


def assert_sane(part: dict) -> None:
    """What every energy part holds, whatever the device said: a figure within its bounds, or
    None with a reason beside it."""
    for s in part["sources"]:
        joules = s.get("energy_j")
        if joules is None:
            assert s.get("reason"), s
        else:
            assert 0 <= joules <= MAX_POWER_W * (s["seconds"] or 0) + 1e-9, s
        for figure in FIGURES:
            if isinstance(s.get(figure), dict):
                assert 0 <= s[figure]["mean"] <= s[figure]["max"] <= BOUNDS[figure], s
    if part["energy_j"] is None:
        assert part["reason"] and part["j_per_output_token"] is None and part["output_tokens_per_j"] is None
    else:
        assert 0 <= part["energy_j"] <= MAX_POWER_W * part["seconds"] * len(part["devices"]) + 1e-9
        assert part["mean_power_w"] is None or 0 <= part["mean_power_w"] <= MAX_POWER_W * len(part["devices"])
        assert part["j_per_output_token"] is None or part["j_per_output_token"] >= 0


# -- hwmon: files holding nonsense, and files that vanish ---------------------------------------


@pytest.mark.parametrize("text", ["nan", "-61250000", "1e300", "9" * 40, "inf", "0x3a"])
def test_a_power_file_holding_nonsense_mid_level_is_left_out_of_the_integral(tmp_path, text):
    mon = apu_tree(tmp_path)
    [source], _ = hwmon.open_sources(tmp_path, clock=ticks())

    def power(i):
        write(mon / "power1_input", text if i == 2 else 61_250_000)

    part = level(source, 5, power)
    [s] = part["sources"]
    assert part["method"] == INTEGRATED and s["readings"] + s.get("errors", 0) == 5
    assert part["energy_j"] == pytest.approx(61.25 * 2.0)  # the trapezoid bridges the one bad read
    assert s["power_w"] == {"mean": 61.25, "max": 61.25}


def test_a_power_file_that_vanishes_mid_level_keeps_the_readings_before_and_nulls_the_level(tmp_path):
    mon = apu_tree(tmp_path)
    [source], _ = hwmon.open_sources(tmp_path, clock=ticks())

    def vanish(i):
        if i == 3:
            (mon / "power1_input").unlink()

    part = level(source, 8, vanish)
    [s] = part["sources"]
    assert part["energy_j"] is None and part["source"] == "hwmon"
    assert "card1: its last read failed, so its readings do not span the level" in part["reason"]
    assert "5 of 8 reads failed" in part["reason"] and "power1_input is absent" in part["reason"]
    assert s["partial"] and s["readings"] == 3 and s["energy_j"] == pytest.approx(61.25 * 1.0)


def test_a_file_that_vanishes_and_comes_back_is_bridged_and_counted(tmp_path):
    mon = apu_tree(tmp_path)
    [source], _ = hwmon.open_sources(tmp_path, clock=ticks())

    def blink(i):
        if i == 2:
            (mon / "power1_input").unlink()
        if i == 4:
            write(mon / "power1_input", 61_250_000)

    part = level(source, 6, blink)
    [s] = part["sources"]
    assert part["energy_j"] is not None and s["errors"] == 2 and not s.get("partial")
    assert s["readings"] == 4 and "reason" not in part


def test_the_whole_card_folder_vanishing_mid_level_is_a_reason_not_a_crash(tmp_path):
    apu_tree(tmp_path)
    [source], _ = hwmon.open_sources(tmp_path, clock=ticks())
    part = level(source, 4, lambda i: i == 2 and shutil.rmtree(tmp_path / "card1"))
    assert part["energy_j"] is None and "its last read failed" in part["reason"]


def test_an_energy_file_leaping_ahead_is_a_fault_and_power_is_integrated(tmp_path):
    mon = apu_tree(tmp_path)
    [source], _ = hwmon.open_sources(tmp_path, clock=ticks())

    def energy(i):  # 30.6 J a read, then a leap of 10^12 J in half a second
        write(mon / "energy1_input", (10**18 if i == 3 else 0) + i * 30_625_000)

    part = level(source, 5, energy)
    assert part["method"] == INTEGRATED and part["energy_j"] == pytest.approx(61.25 * 2.0)
    [s] = part["sources"]
    assert "stepped 1e+12 J in 0.5 s, past 10000 W; power integrated instead" in s["reason"]


# -- RAPL: counters that go back, wrap, leap -----------------------------------------------------


def _rapl(tmp_path, counts, wrap: bool = True):
    rapl_tree(tmp_path)
    if not wrap:
        (tmp_path / "intel-rapl:0" / "max_energy_range_uj").unlink()
    [package, _] = rapl.open_sources(tmp_path, clock=ticks(1.0))[0]
    return level(package, len(counts), lambda i: write(tmp_path / "intel-rapl:0" / "energy_uj", counts[i]))


def test_a_rapl_counter_going_back_without_its_range_is_null_with_the_reset_said(tmp_path):
    part = _rapl(tmp_path, [1_000_000, 2_000_000, 500_000, 900_000], wrap=False)
    assert part["energy_j"] is None
    assert "went back (a reset); fewer than two power readings and no energy counter" in part["reason"]


def test_a_rapl_counter_going_back_past_the_power_bound_is_no_wrap(tmp_path):
    """A step down is taken as a wrap only where the wrap's energy fits the power bound: from
    2 J back to 1 J with a range of 262 kJ would be 262 kJ in one second."""
    part = _rapl(tmp_path, [1_000_000, 2_000_000, 1_000_000])
    assert part["energy_j"] is None and "past 10000 W" in part["reason"]


def test_a_rapl_counter_that_wraps_is_still_counted_across_the_wrap(tmp_path):
    part = _rapl(tmp_path, [262_100_000_000, 56_671_150, 156_671_150])
    assert part["method"] == COUNTER and part["energy_j"] == pytest.approx(200.0)


@pytest.mark.parametrize("text", ["nan", "-5", "1e300", "9" * 30])
def test_a_rapl_counter_holding_nonsense_is_a_failed_read_and_the_level_says_so(tmp_path, text):
    part = _rapl(tmp_path, [1_000_000, 2_000_000, text])
    assert part["energy_j"] is None
    if text.isdigit():  # a number, but no counter's: the reading has no counter and says why
        assert "gave no figure (the device answered 1e+24, past 1e+15" in part["reason"]
    else:  # no number: the read failed, and the readings before the fault are kept
        assert "its last read failed" in part["reason"]
        assert part["sources"][0]["energy_j"] == pytest.approx(1.0)


# -- amdsmi: a stand-in of the bindings that raises after the first reading, or answers nonsense -


def _amdsmi_after_first(answers: list) -> SimpleNamespace:
    """The bindings' stand-in whose power and energy calls answer ``answers`` in turn (an
    exception is raised), as a card that fell off the bus does after its first reading."""
    smi = fake_amdsmi()
    turns = iter(answers)
    energy = itertools.count(1_000_000, 50_000)

    def power(handle):
        answer = next(turns)
        if isinstance(answer, Exception):
            smi.amdsmi_get_energy_count = lambda h: (_ for _ in ()).throw(answer)
            raise answer
        return {"current_socket_power": answer, "average_socket_power": "N/A", "socket_power": "N/A"}

    smi.amdsmi_get_power_info = power
    smi.amdsmi_get_energy_count = lambda h: {"energy_accumulator": next(energy), "counter_resolution": 15.3}
    return smi


def test_amdsmi_raising_after_the_first_reading_is_null_with_its_line():
    lost = AmdSmiException("AMDSMI_STATUS_DRM_ERROR")
    [source], _ = amd_smi.open_sources(_amdsmi_after_first([72, lost, lost, lost]), clock=ticks())
    part = level(source, 4)
    assert part["energy_j"] is None
    assert (
        "3 of 4 reads failed, the last: amdsmi 0: AMD Radeon 8060S: no power and no energy" in part["reason"]
    )
    assert "AMDSMI_STATUS_DRM_ERROR" in part["reason"]


@pytest.mark.parametrize("watts", [math.nan, -72, 1e300, math.inf, "N/A", None])
def test_amdsmi_answering_nonsense_power_keeps_it_out(watts):
    [source], _ = amd_smi.open_sources(_amdsmi_after_first([72, watts, 72, 72]), clock=ticks())
    part = level(source, 4)
    [s] = part["sources"]
    assert s["power_w"] == {"mean": 72.0, "max": 72.0}
    assert part["method"] == COUNTER and part["energy_j"] == pytest.approx(3 * 50_000 * 15.3e-6)


# -- an NVML-shaped binding of Python (NaN and 1e300 need no C) ----------------------------------


class NVMLError(Exception):
    pass


def fake_nvml(watts: list) -> SimpleNamespace:
    """pynvml's calls, answering ``watts`` in turn (milliwatts), no counter."""
    turns = iter(watts)

    def unsupported(*args):
        raise NVMLError("Not Supported")

    def power(handle):
        answer = next(turns)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return SimpleNamespace(
        NVMLError=NVMLError,
        NVML_CLOCK_SM=1,
        NVML_CLOCK_MEM=2,
        NVML_TEMPERATURE_GPU=0,
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: "h0",
        nvmlDeviceGetName=lambda h: b"NVIDIA stand-in",
        nvmlDeviceGetPowerUsage=power,
        nvmlDeviceGetTotalEnergyConsumption=unsupported,
        nvmlDeviceGetUtilizationRates=unsupported,
        nvmlDeviceGetMemoryInfo=unsupported,
        nvmlDeviceGetTemperature=unsupported,
        nvmlDeviceGetClockInfo=unsupported,
    )


@pytest.mark.parametrize("bad", [math.nan, -210_000, 1e300, 1e303])
def test_nvml_power_of_nan_negative_or_1e300_is_a_stated_null_not_joules(bad):
    [source], _ = nvml.open_sources(fake_nvml([210_000, bad, bad, 210_000]), clock=ticks())
    part = level(source, 4)
    [s] = part["sources"]
    assert part["energy_j"] == pytest.approx(210.0 * 1.5) and s["power_w"]["max"] == 210.0
    every_bad = level(nvml.open_sources(fake_nvml([bad] * 3), clock=ticks())[0][0], 3)
    assert (
        every_bad["energy_j"] is None
        and "the device answered" in every_bad["sources"][0]["missing"]["power_w"]
    )


def test_nvml_raising_after_the_first_reading_is_null_with_its_line():
    lost = NVMLError("GPU is lost")
    [source], _ = nvml.open_sources(fake_nvml([210_000, lost, lost]), clock=ticks())
    part = level(source, 3)
    assert part["energy_j"] is None and "fewer than two power readings" in part["reason"]
    assert "2 of 3 reads failed, the last: nvml 0: NVIDIA stand-in: no power and no energy" in part["reason"]


# -- powermetrics: output cut mid-plist, and figures that are no figures -------------------------


def _powermetrics(outputs: list[bytes]):
    turns = iter(outputs)
    return powermetrics.PowermetricsSource(lambda argv: next(turns), clock=ticks())


@pytest.mark.parametrize("cut", [0.5, 0.9, 0.1])
def test_powermetrics_cut_mid_plist_in_the_middle_is_bridged(cut):
    whole = PLIST.split(b"\0")[0] + b"\0"
    part = level(_powermetrics([whole, whole[: int(len(whole) * cut)], whole, whole]), 4)
    [s] = part["sources"]
    assert part["energy_j"] is not None and s["errors"] == 1
    assert "no property list" in s["last_error"] or "no sample" in s["last_error"]


def test_powermetrics_cut_mid_plist_at_the_end_nulls_the_level_and_keeps_the_readings_before():
    whole = PLIST.split(b"\0")[0] + b"\0"
    part = level(_powermetrics([whole, whole, whole, whole[:700]]), 4)
    [s] = part["sources"]
    assert part["energy_j"] is None and "its last read failed" in part["reason"]
    assert s["partial"] and s["readings"] == 3 and s["energy_j"] > 0


@pytest.mark.parametrize("watts", ["nan", "-12000", "1e300", "inf"])
def test_powermetrics_power_that_is_no_figure_is_left_out(watts):
    whole = PLIST.split(b"\0")[0]
    start = whole.index(b"<key>combined_power</key>")
    value_at = whole.index(b"<real>", start) + len(b"<real>")
    end = whole.index(b"</real>", value_at)
    bad = whole[:value_at] + watts.encode() + whole[end:]
    part = level(_powermetrics([whole, bad, whole]), 3)
    [s] = part["sources"]
    assert part["energy_j"] is not None and s["power_w"]["max"] < 1000
    assert s["readings"] == 3


# -- the practice server's imitation, answering nonsense -----------------------------------------


@pytest.mark.parametrize("watts", [math.nan, -30, 1e300, "lots", None])
def test_the_practice_imitation_answering_nonsense_is_no_figure(monkeypatch, watts):
    import json

    turns = iter([40.0, watts, 40.0])

    def request(method, url, bounds, **kw):
        body = {"label": "imitation", "profile": "kit", "busy_seats": 1, "power_w": next(turns)}
        return Reply(200, {}, json.dumps(body).encode())

    monkeypatch.setattr(practice.http, "request", request)
    source = practice.PracticePower("http://127.0.0.1:9/practice/power", "imitation of kit", ticks())
    part = level(source, 3)
    assert part["energy_j"] == pytest.approx(40.0) and part["label"] == "imitation"
