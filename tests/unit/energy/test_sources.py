"""The other telemetry sources and what joins them: powermetrics' property-list output as its
manual documents it (tests/fixtures/telemetry/README.md says how the sample was made), AMD's
amdsmi bindings (a fake module of their calls: the bindings need ROCm's library), NVML absent
through nvidia-ml-py's own loader, ``--telemetry`` words, the one-line refusal, and the sampler
thread with its bounded memory and the idle baseline."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from harness.energy.arithmetic import COUNTER, INTEGRATED
from harness.energy.readings import Reading
from harness.errors import ConfigError, HarnessError, TelemetryUnavailable
from harness.energy.detect import Where, detect, parse_spec
from harness.energy.sampler import TelemetrySampler, idle_baseline
from harness.energy.sources import amd_smi, powermetrics
from tests.conftest import FIXTURES, ROOT

PLIST = (FIXTURES / "telemetry" / "powermetrics-two-samples.plist").read_bytes()
NOWHERE = Where(drm_root=ROOT / "absent", powercap_root=ROOT / "absent")


# -- powermetrics ----------------------------------------------------------------------------------


def test_the_command_asks_for_plist_samples_of_the_cpu_and_gpu():
    assert powermetrics.command(250, 2) == [
        "powermetrics", "--samplers", "cpu_power,gpu_power", "--sample-rate", "250", "--sample-count", "2",
        "--format", "plist",
    ]  # fmt: skip
    with pytest.raises(ValueError):
        powermetrics.command(0)


def test_two_nul_separated_samples_parse_to_power_residency_and_clock():
    first, second = powermetrics.parse(PLIST)
    r = powermetrics.reading(first, end=10.0)
    assert r.source == "powermetrics" and r.device == "Mac15,9"
    assert r.power_w == pytest.approx(42.918)  # combined_power 42918 mW
    assert r.utilisation_pct == pytest.approx(96.9)  # 1 - idle_ratio 0.031
    assert r.clocks_mhz == {"gpu": 1398.0}
    assert r.at == pytest.approx(10.0 - 0.503212459 / 2)  # the window's middle
    assert r.missing["temperature_c"] == "powermetrics gives thermal pressure only (Nominal)"
    assert "not a running counter" in r.missing["energy_j"]
    assert powermetrics.reading(second, 11.0).power_w == pytest.approx(45.095)


def test_older_output_without_power_keys_gives_power_from_the_windows_energy():
    sample = {"elapsed_ns": 500_000_000, "processor": {"cpu_energy": 1000, "gpu_energy": 4000}, "gpu": {}}
    assert powermetrics.reading(sample, 1.0).power_w == 10.0  # 5000 mJ over 0.5 s
    bare = powermetrics.reading({"processor": {}}, 1.0)
    assert bare.power_w is None and bare.missing["power_w"] == "the sample has no processor power"


@pytest.mark.parametrize("data", [b"<plist>broken", b"not xml at all", PLIST[:200]])
def test_output_that_is_no_property_list_is_refused(data):
    with pytest.raises(ValueError, match="no property list"):
        powermetrics.parse(data)


def test_the_source_runs_the_command_through_its_runner():
    asked = []

    def run(argv):
        asked.append(argv)
        return PLIST

    [source], why = powermetrics.open_sources(run=run, clock=lambda: 3.0)
    assert why is None and source.read().power_w == pytest.approx(45.095)  # the last sample
    assert asked == [powermetrics.command(500, 1)]
    silent = powermetrics.PowermetricsSource(lambda argv: None)
    with pytest.raises(TelemetryUnavailable, match="needs root"):
        silent.read()


def test_without_a_runner_or_a_shim_it_needs_a_mac_and_root_and_says_the_remedy():
    [], linux = powermetrics.open_sources(system="Linux")
    assert linux.startswith("powermetrics: macOS only (this is Linux); a harness in a container on a Mac")
    assert "HARNESS_SHIM_URL" in linux
    [], user = powermetrics.open_sources(system="Darwin", is_root=False)
    assert user == (
        "powermetrics: needs root; run the harness as root, or start the host-side shim as root with "
        "powermetrics allowed (sudo make shim SHIM_POWERMETRICS=1) and set HARNESS_SHIM_URL"
    )


def test_through_the_shim_each_read_asks_it_for_the_window(monkeypatch):
    asked = []

    def power_sample(url, interval_ms):
        asked.append((url, interval_ms))
        return PLIST

    monkeypatch.setattr(powermetrics, "shim_sample", power_sample)
    [source], why = powermetrics.open_sources(clock=lambda: 3.0, shim_url="http://mac:8790")
    assert why is None and source.device == "Apple silicon (the shim's host)"
    assert source.read().power_w == pytest.approx(45.095)
    assert asked == [("http://mac:8790", 100), ("http://mac:8790", 500)]  # the probe, then a read


def test_the_shims_refusal_is_the_sources_one_line(monkeypatch, tmp_path):
    def refused(url, interval_ms):
        raise TelemetryUnavailable(f"powermetrics: the shim at {url} answered HTTP 403: not root")

    monkeypatch.setattr(powermetrics, "shim_sample", refused)
    assert powermetrics.open_sources(shim_url="http://mac:8790") == (
        [],
        "powermetrics: the shim at http://mac:8790 answered HTTP 403: not root",
    )
    monkeypatch.setattr(powermetrics, "shim_sample", lambda url, ms: b"<plist>broken")
    [], broken = powermetrics.open_sources(shim_url="http://mac:8790")
    assert broken.startswith("powermetrics: the shim at http://mac:8790 answered: powermetrics output is no")


def test_without_the_shims_token_it_is_one_line_and_nothing_is_sent(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_SHIM_TOKEN_FILE", str(tmp_path / "token"))
    [], why = powermetrics.open_sources(shim_url="http://127.0.0.1:9")
    assert why.startswith(f"powermetrics: cannot read the shim's token file {tmp_path / 'token'}")
    assert "\n" not in why


def test_detection_reads_through_the_shim_the_environment_names(monkeypatch):
    monkeypatch.setenv("HARNESS_SHIM_URL", "http://mac:8790")
    assert Where().shim_url == "http://mac:8790"
    monkeypatch.delenv("HARNESS_SHIM_URL")
    assert Where().shim_url is None


# -- amdsmi --------------------------------------------------------------------------------------------


class AmdSmiException(Exception):
    pass


def fake_amdsmi(power=None, energy=None, memory_ok=True):
    """The calls of AMD's amdsmi bindings the source makes, answering as the bindings do: dicts
    with "N/A" where the device lacks a field."""

    def memory(handle, kind):
        if not memory_ok:
            raise AmdSmiException("AMDSMI_STATUS_NOT_SUPPORTED")
        return 2_000_000_000

    return SimpleNamespace(
        AmdSmiException=AmdSmiException,
        AmdSmiMemoryType=SimpleNamespace(VRAM=0),
        AmdSmiTemperatureType=SimpleNamespace(EDGE=0),
        AmdSmiTemperatureMetric=SimpleNamespace(CURRENT=0),
        AmdSmiClkType=SimpleNamespace(GFX=0),
        amdsmi_init=lambda: None,
        amdsmi_shut_down=lambda: calls.append("shut_down"),
        amdsmi_get_processor_handles=lambda: ["h0"],
        amdsmi_get_gpu_asic_info=lambda h: {"market_name": "AMD Radeon 8060S"},
        amdsmi_get_power_info=lambda h: (
            power or {"current_socket_power": "N/A", "average_socket_power": 72, "socket_power": 72}
        ),
        amdsmi_get_energy_count=lambda h: (
            energy or {"energy_accumulator": 1_000_000, "counter_resolution": 15.3, "timestamp": 1}
        ),
        amdsmi_get_gpu_activity=lambda h: {"gfx_activity": 88, "umc_activity": 40, "mm_activity": "N/A"},
        amdsmi_get_gpu_memory_usage=memory,
        amdsmi_get_temp_metric=lambda h, kind, metric: 61,
        amdsmi_get_clock_info=lambda h, kind: {"clk": 2900, "min_clk": 600, "max_clk": 2900},
    )


calls: list[str] = []


def test_amdsmi_reads_average_power_the_energy_accumulator_and_the_rest():
    [source], why = amd_smi.open_sources(fake_amdsmi(), clock=lambda: 1.0)
    r = source.read()
    assert why is None and source.device == "0: AMD Radeon 8060S"
    assert r.power_w == 72.0 and r.energy_j == pytest.approx(15.3)  # 1e6 counts x 15.3 uJ
    assert (r.utilisation_pct, r.memory_used_mb, r.temperature_c, r.clocks_mhz) == (
        88.0,
        2000.0,
        61.0,
        {"gfx": 2900.0},
    )
    calls.clear()
    source.close()
    source.close()
    assert calls == ["shut_down"]


def test_amdsmi_states_what_the_device_lacks():
    smi = fake_amdsmi(energy={"power": "N/A", "counter_resolution": 15.3}, memory_ok=False)
    [source], _ = amd_smi.open_sources(smi)
    r = source.read()
    assert r.energy_j is None and r.missing["energy_j"] == "amdsmi answers N/A"
    assert r.memory_used_mb is None and r.missing["memory_used_mb"] == "amdsmi: AMDSMI_STATUS_NOT_SUPPORTED"


def test_amdsmi_absent_is_one_line():
    assert amd_smi.open_sources(None)[1] in (amd_smi.NOT_INSTALLED, None)  # None only where ROCm is here


# -- detect --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, kinds, by_name",
    [
        ("auto", ("nvml", "amdsmi", "hwmon", "powermetrics", "rapl"), False),
        ("none", (), False),
        ("NVML", ("nvml",), True),
        ("rapl, nvml,rapl", ("rapl", "nvml"), True),
    ],
)
def test_telemetry_words(spec, kinds, by_name):
    assert parse_spec(spec) == (kinds, by_name)


@pytest.mark.parametrize("spec", ["", "cuda", "auto,nvml", "none,rapl"])
def test_a_bad_telemetry_word_is_a_config_error(spec):
    with pytest.raises(ConfigError, match="--telemetry"):
        parse_spec(spec)


@pytest.fixture
def no_nvml_library(monkeypatch):
    """nvidia-ml-py's own loader finding no libnvidia-ml.so.1 (as on this CPU machine)."""
    pynvml = pytest.importorskip("pynvml")

    def missing(name, *args, **kwargs):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(pynvml, "nvmlLib", None)
    monkeypatch.setattr(pynvml, "CDLL", missing)


def test_nvml_asked_for_where_there_is_none_is_one_line(no_nvml_library):
    found = detect("nvml", NOWHERE)
    assert found.sources == [] and found.absent == {
        "nvml": "nvml: no NVIDIA driver library here (libnvidia-ml.so.1)"
    }
    refused = found.refusal()
    assert isinstance(refused, HarnessError) and refused.exit_code == 2
    assert str(refused) == (
        "--telemetry nvml: nvml: no NVIDIA driver library here (libnvidia-ml.so.1) "
        "(--telemetry auto reads what is here)"
    )


def test_auto_takes_what_is_here_and_says_why_for_the_rest(no_nvml_library, tmp_path):
    (tmp_path / "intel-rapl:0").mkdir()
    (tmp_path / "intel-rapl:0" / "name").write_text("package-0\n")
    (tmp_path / "intel-rapl:0" / "energy_uj").write_text("123\n")
    found = detect(
        "auto", Where(drm_root=ROOT / "absent", powercap_root=tmp_path, amdsmi_bindings=fake_amdsmi())
    )
    assert [(s.kind, s.device) for s in found.sources] == [
        ("amdsmi", "0: AMD Radeon 8060S"),
        ("rapl", "package-0"),
    ]
    assert found.refusal() is None  # auto refuses nothing
    assert set(found.absent) == {"nvml", "hwmon", "powermetrics"}
    assert found.absent["hwmon"] == "hwmon: amdsmi reads these cards already"
    assert all("\n" not in line for line in found.lines())
    assert found.record()["found"] == [
        {"source": "amdsmi", "device": "0: AMD Radeon 8060S"},
        {"source": "rapl", "device": "package-0"},
    ]


def test_none_reads_nothing():
    found = detect("none", NOWHERE)
    assert (
        found.sources == []
        and found.refusal() is None
        and found.lines() == ["telemetry: off (--telemetry none)"]
    )


# -- the sampler ---------------------------------------------------------------------------------------


class Steady:
    """A source at a steady power with a counter, on the sampler's clock."""

    kind, device = "fake", "steady"

    def __init__(self, watts=100.0, clock=time.monotonic, fail_every=0):
        self.watts, self.clock, self.fail_every, self.reads, self.closed = watts, clock, fail_every, 0, False
        self.start = clock()

    def read(self) -> Reading:
        self.reads += 1
        if self.fail_every and self.reads % self.fail_every == 0:
            raise TelemetryUnavailable("fake steady: the device went away for a moment")
        at = self.clock()
        return Reading(
            self.kind, self.device, at, power_w=self.watts, energy_j=self.watts * (at - self.start)
        )

    def close(self) -> None:
        self.closed = True


def test_the_sampler_reads_on_its_own_thread_until_stopped():
    source = Steady()
    sampler = TelemetrySampler([source], interval=0.02)
    sampler.start()
    time.sleep(0.12)
    sampler.stop()
    reads = source.reads
    time.sleep(0.05)
    assert source.reads == reads, "no read after stop"
    [level] = sampler.summary()["sources"]
    assert level["method"] == COUNTER and level["readings"] == reads >= 2
    assert level["mean_power_w"] == pytest.approx(100.0)
    assert sampler.summary()["interval_s"] == 0.02


def test_failed_reads_are_counted_with_their_line_and_no_figure():
    ticks = iter(range(100))
    source = Steady(clock=lambda: float(next(ticks)), fail_every=3)
    sampler = TelemetrySampler([source])
    for _ in range(9):
        sampler.poll_once()
    [level] = sampler.summary()["sources"]
    assert level["readings"] == 6 and level["errors"] == 3
    assert level["last_error"] == "fake steady: the device went away for a moment"


def test_memory_is_bounded_and_the_kept_readings_stay_spread_over_the_level():
    ticks = iter(range(10_000))
    source = Steady(clock=lambda: float(next(ticks)))
    sampler = TelemetrySampler([source], keep=16)
    for _ in range(1000):
        sampler.poll_once()
    [kept] = sampler.readings()
    assert 8 <= len(kept) <= 16
    assert kept[0].at == 1.0 and kept[-1].at > 900  # the first and the late part of the level
    [level] = sampler.summary()["sources"]
    assert level["readings"] == 1000 and level["energy_j"] == pytest.approx(
        100.0 * 999
    )  # every reading counted


def test_a_bad_interval_is_refused():
    with pytest.raises(ValueError):
        TelemetrySampler([], interval=0)


def test_the_idle_baseline_is_a_short_reading_of_every_source():
    ticks = iter(range(100))
    source = Steady(watts=35.0, clock=lambda: float(next(ticks)))
    baseline = idle_baseline([source], seconds=0.0, interval=10.0, sleep=lambda s: None)
    [idle] = baseline["sources"]
    assert (
        baseline["seconds"] == 0.0 and idle["mean_power_w"] == pytest.approx(35.0) and idle["readings"] == 2
    )


def test_power_only_sources_say_their_energy_was_integrated():
    ticks = iter(range(100))

    class PowerOnly(Steady):
        def read(self):
            r = super().read()
            return Reading(r.source, r.device, r.at, power_w=r.power_w)

    sampler = TelemetrySampler([PowerOnly(clock=lambda: float(next(ticks)))])
    for _ in range(3):
        sampler.poll_once()
    assert sampler.summary()["sources"][0]["method"] == INTEGRATED
