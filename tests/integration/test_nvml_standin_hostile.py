"""NVML fed faults through the STAND-IN library (tests/fixtures/telemetry/standin_nvml.c, built
here with gcc; pynvml's own code runs against it): a card lost after its first reading or in
the middle of a level, a counter that goes back, a power of 4 MW. The level keeps its figures;
its energy part is null with its reason or uses the readings before the fault, never a negative
or absurd figure. The last test runs ``harness sweep`` against the practice server with the
library found by pynvml's own loader. Skipped, saying so, where gcc is missing."""

from __future__ import annotations

import ctypes
import itertools
import os

import pytest

from harness.energy.arithmetic import COUNTER, INTEGRATED, MAX_POWER_W
from harness.energy.detect import detect
from harness.energy.record_part import energy_part
from harness.energy.sampler import TelemetrySampler
from harness.records.notebook import problems
from tests.conftest import kit_profile
from tests.integration.test_nvml_standin import library  # noqa: F401 (the fixture: the built library)
from tests.integration.test_sweep import levels, sweep

pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")
CARD = "0: NVIDIA card 0 (stand-in)"


@pytest.fixture
def card(library, monkeypatch):  # noqa: F811
    lib = ctypes.CDLL(str(library))
    lib.standin_set(0, 1)
    lib.standin_set_power(0, 210000)
    lib.standin_fail_after(0)
    monkeypatch.setattr(pynvml, "nvmlLib", lib)
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
    found = detect("nvml")
    [source] = found.sources
    clock = itertools.count()
    source.clock = lambda: next(clock) * 0.5
    yield lib, source
    found.close()
    lib.standin_fail_after(0)
    assert lib.standin_inits() == 0


def level(source, reads: int, between=None) -> dict:
    sampler = TelemetrySampler([source])
    for i in range(reads):
        if between:
            between(i)
        sampler.poll_once()
    part = energy_part(sampler.summary(), None, "nvml", {}, output_tokens=100, requests=4)
    if part["energy_j"] is not None:
        assert 0 <= part["energy_j"] <= MAX_POWER_W * part["seconds"]
    else:
        assert part["reason"] and part["j_per_output_token"] is None
    return part


def test_a_card_lost_after_its_first_reading_gives_a_null_with_nvmls_words(card):
    lib, source = card
    lib.standin_fail_after(1)
    part = level(source, 4)
    assert part["energy_j"] is None and part["devices"] == [] and part["source"] is None
    assert f"nvml {CARD}: fewer than two power readings and no energy counter" in part["reason"]
    assert (
        "3 of 4 reads failed, the last: nvml 0: NVIDIA card 0 (stand-in): no power and no energy"
        in part["reason"]
    )
    assert "GPU is lost" in part["reason"]


def test_a_card_lost_mid_level_keeps_the_readings_before(card):
    lib, source = card
    lib.standin_fail_after(3)
    part = level(source, 6)
    [s] = part["sources"]
    assert part["energy_j"] is None and "its last read failed" in part["reason"]
    assert s["partial"] and s["method"] == COUNTER and s["energy_j"] == pytest.approx(2 * 105.0)
    assert s["seconds"] == 1.0 and s["mean_power_w"] == pytest.approx(210.0)


def test_a_counter_that_goes_back_is_a_reset_and_power_is_integrated(card):
    lib, source = card
    part = level(source, 4, lambda i: i == 2 and lib.standin_set_energy(0, ctypes.c_ulonglong(1000)))
    assert part["method"] == INTEGRATED and part["energy_j"] == pytest.approx(210.0 * 1.5)
    assert "went back (a reset); power integrated instead" in part["sources"][0]["reason"]


def test_four_megawatts_is_no_figure_and_no_joules(card):
    lib, source = card
    lib.standin_set_power(0, 4_000_000_000)  # 4 MW in milliwatts: NVML's unsigned int allows it
    part = level(source, 3)
    [s] = part["sources"]
    assert part["energy_j"] is None and "power_w" not in s
    assert "past 10000 W" in part["reason"]  # the counter's steps of 2 MJ a half-second
    assert "past 10000 (no device's figure)" in s["missing"]["power_w"]


@pytest.mark.slow
def test_a_sweep_keeps_its_levels_when_the_card_is_lost_after_its_first_reading(library, practice, tmp_path):  # noqa: F811
    server = practice(kit_profile(name="lost"))
    book = tmp_path / "labbook.md"
    env = {
        "LD_LIBRARY_PATH": f"{library.parent}:{os.environ.get('LD_LIBRARY_PATH', '')}",
        "STANDIN_NVML_FAIL_AFTER": "1",
    }
    out = sweep(
        "--base-url", server.base_url, "--model", "local-chat", "--concurrency", "1,4", "--requests", "8",
        "--max-tokens", "16", "--label", "lost", "--labbook", str(book), "--telemetry", "nvml",
        "--idle-seconds", "0", "--telemetry-interval", "0.05", env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "telemetry: reading nvml 0: NVIDIA card 0 (stand-in)" in out.stdout
    one, four = levels(book)
    for rec in (one, four):
        assert not problems(rec, "level")
        assert rec["completed"] == 8 and rec["failed"] == 0 and rec["output_tokens"] > 0  # its figures
        e = rec["energy"]
        assert e["energy_j"] is None and e["j_per_output_token"] is None
        assert "GPU is lost" in e["reason"], e["reason"]
    assert out.stdout.count("energy: none (") == 2
