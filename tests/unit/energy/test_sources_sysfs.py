"""The sysfs sources on trees in a temporary folder laid out as the kernel lays them out: amdgpu's
hwmon files (``/sys/class/drm/card*/device/hwmon/hwmon*/``, the Ryzen AI Max+ APU path) and RAPL's
powercap zones (``/sys/class/powercap/intel-rapl:*``), whose counters advance and wrap."""

from __future__ import annotations

import os

import pytest

from harness.energy.arithmetic import COUNTER, INTEGRATED
from harness.errors import TelemetryUnavailable
from harness.energy.detect import Where, detect
from harness.energy.sampler import TelemetrySampler
from harness.energy.sources import hwmon, rapl
from harness.energy.sources import base as telemetry_base


def write(path, text) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{text}\n")


def apu_tree(root, power_file="power1_input", hwmon_name="amdgpu"):
    """card1 as an APU's amdgpu driver shows it: power1_input only, no energy file; plus a
    display connector (card1-DP-1) and another hwmon (the NVMe's) that are not cards."""
    device = root / "card1" / "device"
    write(device / "gpu_busy_percent", 93)
    write(device / "mem_info_vram_used", 512 * 2**20)
    mon = device / "hwmon" / "hwmon5"
    write(mon / "name", hwmon_name)
    write(mon / power_file, 61_250_000)  # 61.25 W in microwatts
    write(mon / "temp1_input", 58_000)
    write(mon / "freq1_input", 2_900_000_000)
    write(root / "card1-DP-1" / "status", "disconnected")
    write(root / "card0" / "device" / "hwmon" / "hwmon0" / "name", "nvme")
    return mon


def test_an_apu_reads_power_busy_vram_temperature_and_clock(tmp_path):
    apu_tree(tmp_path)
    [source], why = hwmon.open_sources(tmp_path, clock=lambda: 5.0)
    assert why is None and source.device == "card1"
    r = source.read()
    assert (r.power_w, r.utilisation_pct, r.temperature_c) == (61.25, 93.0, 58.0)
    assert r.memory_used_mb == pytest.approx(536.870912)
    assert r.clocks_mhz == {"sclk": 2900.0}
    assert r.energy_j is None and "energy1_input is absent" in r.missing["energy_j"]
    assert "freq2_input is absent" in r.missing["clock_mclk_mhz"]


def test_power1_average_is_read_before_power1_input(tmp_path):
    mon = apu_tree(tmp_path, power_file="power1_average")
    write(mon / "power1_input", 99_000_000)
    [source], _ = hwmon.open_sources(tmp_path)
    assert source.read().power_w == 61.25


def test_the_hwmon_level_integrates_power_as_it_changes(tmp_path):
    mon = apu_tree(tmp_path)
    ticks = iter([0.0, 1.0, 2.0])
    [source], _ = hwmon.open_sources(tmp_path, clock=lambda: next(ticks))
    sampler = TelemetrySampler([source])
    for microwatts in (60_000_000, 80_000_000, 80_000_000):
        write(mon / "power1_input", microwatts)
        sampler.poll_once()
    [level] = sampler.summary()["sources"]
    assert level["method"] == INTEGRATED and level["energy_j"] == 150.0 and level["mean_power_w"] == 75.0


def test_no_amdgpu_card_is_one_line(tmp_path):
    apu_tree(tmp_path, hwmon_name="k10temp")
    assert hwmon.open_sources(tmp_path) == (
        [],
        f"hwmon: no amdgpu card with a power1_average or power1_input under {tmp_path}",
    )
    assert "no " in hwmon.open_sources(tmp_path / "absent")[1]


def test_a_card_whose_power_file_goes_away_fails_the_read_in_one_line(tmp_path):
    mon = apu_tree(tmp_path)
    [source], _ = hwmon.open_sources(tmp_path)
    (mon / "power1_input").unlink()
    with pytest.raises(TelemetryUnavailable, match="hwmon card1: .*power1_input is absent"):
        source.read()


def rapl_tree(root, energy_uj=261_900_000_000, wrap_uj=262_143_328_850):
    for zone, name in (("intel-rapl:0", "package-0"), ("intel-rapl:1", "psys")):
        write(root / zone / "name", name)
        write(root / zone / "energy_uj", energy_uj)
        write(root / zone / "max_energy_range_uj", wrap_uj)
    write(root / "intel-rapl:0:0" / "name", "core")  # inside package-0: left out
    write(root / "intel-rapl:0:0" / "energy_uj", 5)
    write(root / "intel-rapl-mmio:0" / "name", "package-0")  # a second view of package-0
    write(root / "intel-rapl-mmio:0" / "energy_uj", 5)


def test_rapl_reads_the_top_level_zones_and_their_range(tmp_path):
    rapl_tree(tmp_path)
    sources, why = rapl.open_sources(tmp_path)
    assert why is None and [s.device for s in sources] == ["package-0", "psys"]
    r = sources[0].read()
    assert r.energy_j == 261_900.0 and r.energy_wrap_j == pytest.approx(262_143.32885)
    assert r.power_w is None and "energy counter only" in r.missing["power_w"]


def test_a_rapl_counter_that_wraps_gives_the_energy_across_the_wrap(tmp_path):
    rapl_tree(tmp_path)
    ticks = iter([0.0, 1.0, 2.0, 3.0])
    sources, _ = rapl.open_sources(tmp_path, clock=lambda: next(ticks))
    package = sources[0]
    sampler = TelemetrySampler([package])
    for uj in (261_900_000_000, 262_100_000_000, 56_671_150, 156_671_150):  # wraps after the 2nd
        write(tmp_path / "intel-rapl:0" / "energy_uj", uj)
        sampler.poll_once()
    [level] = sampler.summary()["sources"]
    assert level["method"] == COUNTER
    # 200 J, then 43.33 J to the range and 56.67 J past it, then 100 J
    assert level["energy_j"] == pytest.approx(400.0)
    assert level["mean_power_w"] == pytest.approx(400.0 / 3)


def test_a_rapl_counter_without_its_range_going_back_is_a_reset_not_energy(tmp_path):
    rapl_tree(tmp_path)
    (tmp_path / "intel-rapl:0" / "max_energy_range_uj").unlink()
    ticks = iter([0.0, 1.0, 2.0])
    [package, _] = rapl.open_sources(tmp_path, clock=lambda: next(ticks))[0]
    sampler = TelemetrySampler([package])
    for uj in (1_000_000, 2_000_000, 500_000):
        write(tmp_path / "intel-rapl:0" / "energy_uj", uj)
        sampler.poll_once()
    [level] = sampler.summary()["sources"]
    assert level["energy_j"] is None and level["method"] is None  # RAPL has no power to integrate
    assert "a step down is then a reset" in level["missing"]["energy_wrap_j"]


def test_a_root_only_energy_file_is_a_refusal_in_one_line(tmp_path, monkeypatch):
    """Kernels since 2020 make energy_uj mode 0400; this test runs as any user, so the refusal
    comes from os.open as a non-root user's would."""
    rapl_tree(tmp_path)
    real_open = os.open

    def refuse(path, *args, **kwargs):
        if str(path).endswith("energy_uj"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(telemetry_base.os, "open", refuse)
    sources, why = rapl.open_sources(tmp_path)
    assert sources == []
    assert why == (
        f"rapl: package-0: {tmp_path}/intel-rapl:0/energy_uj is readable by root only here; "
        f"psys: {tmp_path}/intel-rapl:1/energy_uj is readable by root only here"
    )
    refused = detect("rapl", Where(powercap_root=tmp_path)).refusal()
    assert isinstance(refused, TelemetryUnavailable) and "\n" not in str(refused)
    assert str(refused).startswith("--telemetry rapl: rapl: package-0: ")


def test_a_file_holding_no_number_is_a_reason(tmp_path):
    write(tmp_path / "energy_uj", "garbage")
    assert telemetry_base.read_number(tmp_path / "energy_uj") == (
        None,
        f"{tmp_path}/energy_uj holds 'garbage', not a count",
    )
    write(tmp_path / "big", "7" * 200)  # read at most 64 bytes
    value, _ = telemetry_base.read_number(tmp_path / "big")
    assert value == float("7" * telemetry_base.MAX_FILE)
