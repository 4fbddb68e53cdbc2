"""Each memory source the lab reads, on command output in the format each command prints
(tests/fixtures/commands/README.md), through the same snapshot code a real run uses."""

from pathlib import Path

import pytest

from harness.engines import versions as engine_versions, memory
from harness.endpoints.http_client import Reply
from harness.records.notebook import validate
from harness.report.engine_tables import memory_added

CMD = Path(__file__).resolve().parents[2] / "fixtures" / "commands"


def text(name: str) -> str:
    return (CMD / name).read_text(encoding="utf-8")


def runner(answers: dict):
    """A stand-in for running commands here: the recorded output of each command, None otherwise."""

    def run(cmd: list[str]) -> str | None:
        for key, name in answers.items():
            if cmd[: len(key)] == list(key):
                return text(name)
        return None

    return run


MAC_IDLE = {("vm_stat",): "vm_stat-idle.txt", ("sysctl", "-n", "vm.swapusage"): "sysctl-vm.swapusage.txt"}
MAC_LOADED = {**MAC_IDLE, ("vm_stat",): "vm_stat-loaded.txt"}


def test_a_mac_is_measured_by_its_pages_and_swap():
    idle, loaded = memory.snapshot(runner(MAC_IDLE)), memory.snapshot(runner(MAC_LOADED))
    validate(idle, "memory-snapshot")
    page = 16384
    assert idle["mac_used_mb"] == pytest.approx((601234 + 201456 + 81234) * page / 1e6)
    assert idle["mac_swap_used_mb"] == pytest.approx(1126.25 * 2**20 / 1e6, abs=0.1)
    added = memory.delta(idle, loaded)
    # active +187,778 and wired +113,111 pages of 16 KiB: 4,930 MB, whatever psutil says is available
    assert added["mac_used_mb"] == round((187778 + 113111) * page / 1e6) == 4930
    rec = {"memory": loaded, "memory_delta_mb": {**added, "mem_available_mb": 120}}
    assert memory_added(rec) == (4930, "vm_stat active+wired+compressed")


def test_swap_used_is_recorded_everywhere():
    snap = memory.snapshot(runner({}))
    assert snap["swap_used_mb"] >= 0 and "mac_swap_used_mb" not in snap
    assert memory.mac_swap_used_mb("total = 0.00M  used = 0.00M  free = 0.00M") == 0.0
    assert memory.mac_swap_used_mb("nonsense") is None


def test_discrete_nvidia_per_process_and_device():
    answers = {
        ("nvidia-smi", "--query-gpu=memory.used,memory.total"): "nvidia-smi-gpu.txt",
        ("nvidia-smi", "--query-compute-apps=pid,used_memory"): "nvidia-smi-apps.txt",
    }
    snap = memory.snapshot(runner(answers))
    assert (snap["gpu_used_mb"], snap["gpu_total_mb"], snap["gpu_process_mb"]) == (23456, 24564, 6912 + 431)


def test_gb10_device_figure_is_absent_not_zero():
    readings = memory.nvidia_readings(text("nvidia-smi-gpu-gb10.txt"), "")
    assert (readings["gpu_used_mb"], readings["gpu_total_mb"]) == (None, None)
    (note,) = readings["unread"]
    assert "reports no device memory ([N/A], [N/A])" in note and "mem_available_mb is the figure" in note
    rec = {"memory": readings, "memory_delta_mb": {"mem_available_mb": 17900}}
    assert memory_added(rec) == (17900, "MemAvailable")  # a DGX Spark: the lab reads MemAvailable


def test_rocm_vram_plus_gtt():
    snap = memory.snapshot(runner({("rocm-smi",): "rocm-smi-meminfo.json"}))
    assert snap["rocm_vram_used_mb"] == pytest.approx(412.090368)
    assert snap["rocm_gtt_used_mb"] == pytest.approx(6012.33408)
    assert memory.rocm_readings("not json") == {
        "unread": ["rocm-smi --showmeminfo vram gtt --json gave no JSON: 'not json'"]
    }


def test_a_container_engine_is_measured_inside_its_container():
    answers = {("docker", "stats"): "docker-stats-memusage.txt", ("docker", "top"): "docker-top.txt"}
    got = memory.container_memory("trtllm-lab", runner(answers))
    assert got == {
        "container": "trtllm-lab",
        "container_mb": round(7.812 * 2**30 / 1e6),
        "processes": 2,
        "rss_mb": round((6183544 + 1211088) * 1024 / 1e6),
    }
    assert memory.container_memory("gone", runner({})) == {}
    assert memory.docker_stats_mb("512MiB / 2GiB") == pytest.approx(512 * 2**20 / 1e6)
    assert memory.docker_stats_mb("1.5GB / 8GB") == pytest.approx(1500)
    assert memory.docker_top_rss("UID PID\nroot 12") == {}


def test_trtllm_version_is_its_version_reply():
    body = text("trtllm-version.json").encode()
    got = engine_versions.trtllm_version("http://127.0.0.1:8082/v1", get=lambda url: Reply(200, {}, body))
    assert got == 'tensorrt-llm {"version":"1.2.1"}'
    assert engine_versions.server_version("http://x/v1", get=lambda url: Reply(404, {}, b"Not Found")) is None


def test_tabby_version_is_commit_and_exllamav3():

    def run(cmd):
        if cmd[0] == "git":
            assert cmd[1:] == ["-C", "/opt/tabbyAPI", "rev-parse", "--short", "HEAD"]
            return "a1b2c3d"
        if cmd[0].endswith("venv/bin/python"):
            return "0.0.18"
        return None

    assert engine_versions.tabby_version("/opt/tabbyAPI", run) == "tabbyAPI a1b2c3d, exllamav3 0.0.18"
    missing = engine_versions.tabby_version("/opt/none", lambda cmd: None)
    assert missing.startswith("tabbyAPI unknown (no git checkout at /opt/none), exllamav3 unknown (")


@pytest.mark.parametrize(
    "answers",
    [
        MAC_IDLE,
        {("rocm-smi",): "rocm-smi-meminfo.json"},
        {("nvidia-smi", "--query-gpu=memory.used,memory.total"): "nvidia-smi-gpu-gb10.txt"},
        {
            ("nvidia-smi", "--query-gpu=memory.used,memory.total"): "nvidia-smi-gpu.txt",
            ("nvidia-smi", "--query-compute-apps=pid,used_memory"): "nvidia-smi-apps.txt",
        },
    ],
    ids=["mac", "rocm", "gb10", "nvidia"],
)
def test_each_sources_snapshot_is_valid_and_reads_back_as_it_was(answers):
    """A snapshot from each source's recorded output is valid, its figures are the typed record's
    readings (a GB10's null device figures kept as null), and it writes back the same object."""
    from harness.records.engine import MemorySnapshot

    snap = memory.snapshot(runner(answers))
    validate(snap, MemorySnapshot.KIND)
    typed = MemorySnapshot.read(snap)
    assert typed.readings and typed.to_dict() == snap
