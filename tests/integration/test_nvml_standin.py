"""nvidia-ml-py (pynvml) against a STAND-IN NVML library: tests/fixtures/telemetry/standin_nvml.c,
compiled here with gcc into ``libnvidia-ml.so.1``. It exports the NVML functions the telemetry
source calls, with NVML's signatures and return codes, and made-up figures; every device it
lists is named "(stand-in)" and its readings are labelled so. Its energy counter advances by
half a second at the device's power on each read, so the joules between reads are exact.
Skipped, saying so, where gcc is missing."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from harness.energy.arithmetic import COUNTER, INTEGRATED
from harness.energy.detect import Where, detect
from harness.energy.sampler import TelemetrySampler
from tests.conftest import FIXTURES, ROOT

pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")
SOURCE = FIXTURES / "telemetry" / "standin_nvml.c"


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed: the stand-in NVML library cannot be built")
    folder = tmp_path_factory.mktemp("standin-nvml")
    path = folder / "libnvidia-ml.so.1"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(path), str(SOURCE)], check=True, timeout=60)
    return path


@pytest.fixture
def standin(library, monkeypatch):
    """pynvml with the stand-in loaded where it keeps its library (its own loader would dlopen
    libnvidia-ml.so.1 by name, as the subprocess test below has it do)."""
    lib = ctypes.CDLL(str(library))
    lib.standin_set(0, 1)
    monkeypatch.setattr(pynvml, "nvmlLib", lib)
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
    yield lib
    assert lib.standin_inits() == 0, "every nvmlInit was matched by an nvmlShutdown"


def test_a_card_gives_every_figure_and_its_energy_from_the_counter(standin):
    found = detect("nvml")
    assert found.absent == {} and found.refusal() is None
    [source] = found.sources
    assert source.device == "0: NVIDIA card 0 (stand-in)"
    first, second = source.read(), source.read()
    assert first.label == "stand-in"
    assert first.power_w == 210.0 and first.utilisation_pct == 87 and first.temperature_c == 64
    assert first.memory_used_mb == pytest.approx(61234.0)
    assert first.clocks_mhz == {"mem": 2619.0, "sm": 1980.0}
    assert first.missing == {}
    assert second.energy_j - first.energy_j == pytest.approx(105.0)  # 0.5 s at 210 W a read
    found.close()


def test_a_gb10_states_its_memory_null_and_integrates_power(standin):
    standin.standin_set(1, 1)
    found = detect("nvml")
    [source] = found.sources
    ticks = iter([0.0, 0.5, 1.0, 1.5, 2.0])
    source.clock = lambda: next(ticks)
    sampler = TelemetrySampler([source], interval=0.05)
    for _ in range(5):
        sampler.poll_once()
    [summary] = sampler.summary()["sources"]
    assert summary["device"] == "0: NVIDIA GB10 (stand-in)" and summary["label"] == "stand-in"
    assert summary["method"] == INTEGRATED and summary["energy_j"] == pytest.approx(420.0)  # 2 s x 210 W
    assert summary["missing"]["memory_used_mb"] == "NVML: Not Supported"
    assert "memory_used_mb" not in summary
    found.close()


def test_the_sampler_thread_reads_two_cards_off_the_caller(standin):
    standin.standin_set(0, 2)
    standin.standin_set_power(1, 95000)
    found = detect("auto", Where(drm_root=ROOT / "absent", powercap_root=ROOT / "absent"))
    assert [s.device for s in found.sources] == ["0: NVIDIA card 0 (stand-in)", "1: NVIDIA card 1 (stand-in)"]
    sampler = TelemetrySampler(found.sources, interval=0.02)
    sampler.start()
    time.sleep(0.15)  # a few intervals; the figures below hold for any count of reads
    sampler.stop()
    card0, card1 = sampler.summary()["sources"]
    assert card0["method"] == card1["method"] == COUNTER
    reads0, reads1 = card0["readings"], card1["readings"]
    assert reads0 >= 2 and card0["energy_j"] == pytest.approx(105.0 * (reads0 - 1))
    assert card1["energy_j"] == pytest.approx(47.5 * (reads1 - 1))
    found.close()


def test_pynvml_finds_the_library_by_its_own_name(library):
    """pynvml's own loader (dlopen of libnvidia-ml.so.1, found on LD_LIBRARY_PATH) in a fresh process."""
    env = {**os.environ, "LD_LIBRARY_PATH": str(library.parent), "PYTHONPATH": str(ROOT)}
    code = "import json; from harness.energy.detect import detect; print(json.dumps(detect('nvml').record()))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["found"] == [{"source": "nvml", "device": "0: NVIDIA card 0 (stand-in)"}]
