"""``harness telemetry``: a source asked for by name that is absent is one line and exit 2;
``auto`` lists why each source is absent and reads the ones present (a powercap tree in a
temporary folder here)."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.cli import telemetry as telemetry_cli
from harness.energy.detect import Where, detect
from tests.conftest import ROOT


def no_library(name, *args, **kwargs):
    raise OSError(f"{name}: cannot open shared object file")


@pytest.fixture
def here(tmp_path, monkeypatch):
    """This machine as a package-0 RAPL zone whose counter advances 10 J a read, no GPU, no NVML."""
    zone = tmp_path / "intel-rapl:0"
    zone.mkdir()
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    pynvml = pytest.importorskip("pynvml")
    monkeypatch.setattr(pynvml, "nvmlLib", None)
    monkeypatch.setattr(pynvml, "CDLL", no_library)
    ticks = iter(range(100))
    reads = iter(range(0, 10**9, 10_000_000))

    def clock():
        (zone / "energy_uj").write_text(f"{next(reads)}\n")
        return float(next(ticks))

    (zone / "energy_uj").write_text("0\n")
    where = Where(drm_root=ROOT / "absent", powercap_root=tmp_path, clock=clock)
    monkeypatch.setattr(telemetry_cli, "detect", lambda spec: detect(spec, where))


def test_nvml_named_and_absent_is_one_line_and_exit_2(here, capsys):
    assert main(["telemetry", "--telemetry", "nvml", "--seconds", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "harness telemetry: --telemetry nvml: nvml: no NVIDIA driver library here (libnvidia-ml.so.1) "
        "(--telemetry auto reads what is here)"
    )


def test_auto_reads_what_is_here_and_says_why_for_the_rest(here, capsys):
    assert main(["telemetry", "--seconds", "0.01", "--interval", "0.005", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["found"] == [{"source": "rapl", "device": "package-0"}]
    assert set(out["absent"]) == {"nvml", "amdsmi", "hwmon", "powermetrics"}
    [package] = out["reading"]["sources"]
    assert package["method"] == "counter" and package["mean_power_w"] == pytest.approx(10.0)


def test_a_bad_word_is_one_line(capsys):
    assert main(["telemetry", "--telemetry", "cuda"]) == 2
    assert "give auto, none or any of nvml" in capsys.readouterr().err
