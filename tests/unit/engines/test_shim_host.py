"""The engines' host as the shim reports it (harness.endpoints.shim_host, the shim's GET /v1/host): the
memory snapshot built from a Mac's facts as a containerised harness gets them, the preflight's
Metal check answered from them, and this machine read as before when no shim is named."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from harness.engines import memory
from harness.endpoints import shim_host
from harness.records.notebook import validate
from harness.run import preflight, preflight_checks
from harness.run.plans import load_plan

ROOT = Path(__file__).resolve().parents[3]
CMD = ROOT / "tests" / "fixtures" / "commands"
_spec = importlib.util.spec_from_file_location("harness_shim", ROOT / "shim" / "harness_shim.py")
shim = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shim)


def mac_facts(vm_stat: str = "vm_stat-idle.txt") -> dict:
    """What a Mac's shim answers at GET /v1/host (its commands' recorded output)."""
    swapusage = (CMD / "sysctl-vm.swapusage.txt").read_text().strip()
    used, free = shim.swapusage_bytes(swapusage)
    return {
        "system": "Darwin",
        "machine": "arm64",
        "node": "learners-mac",
        "memory_source": "vm_stat",
        "total_bytes": 64 * 2**30,
        "available_bytes": 40 * 2**30,
        "swap_used_bytes": used,
        "swap_free_bytes": free,
        "commands": {
            "vm_stat": (CMD / vm_stat).read_text(),
            "sysctl -n hw.memsize": str(64 * 2**30),
            "sysctl -n vm.swapusage": swapusage,
            "sysctl -n machdep.cpu.brand_string": "Apple M4 Max",
        },
    }


def test_the_shim_reads_macos_swap_usage():
    assert shim.swapusage_bytes("total = 2048.00M  used = 1126.25M  free = 921.75M  (encrypted)") == (
        int(1126.25 * 2**20),
        int(921.75 * 2**20),
    )
    assert shim.swapusage_bytes("total = 0.00M  used = 0.00M  free = 0.00M") == (0, 0)
    assert shim.swapusage_bytes("nonsense") == (None, None)


def test_a_snapshot_of_the_mac_from_inside_a_linux_container():
    idle = memory.snapshot(shim_host.answers(mac_facts()), host=mac_facts())
    loaded = memory.snapshot(
        shim_host.answers(mac_facts("vm_stat-loaded.txt")), host=mac_facts("vm_stat-loaded.txt")
    )
    validate(idle, "memory-snapshot")
    # The Mac's figures, never the container's: its name, system, total and vm_stat pages.
    assert idle["hostname"] == "learners-mac" and idle["system"] == "Darwin arm64"
    assert idle["mem_total_mb"] == pytest.approx(64 * 2**30 / 1e6)
    assert idle["mac_used_mb"] == pytest.approx((601234 + 201456 + 81234) * 16384 / 1e6)
    assert idle["mac_swap_used_mb"] == pytest.approx(1126.25 * 2**20 / 1e6, abs=0.1)
    assert idle["swap_used_mb"] == pytest.approx(1126.25 * 2**20 / 1e6, abs=0.1)
    assert memory.delta(idle, loaded)["mac_used_mb"] == 4930  # as test_memory_sources reads it


def test_the_shim_answers_only_its_fixed_commands():
    run = shim_host.answers(mac_facts())
    assert run(["sysctl", "-n", "hw.memsize"]) == str(64 * 2**30)
    assert run(["nvidia-smi", "--query-gpu=memory.used,memory.total"]) is None
    assert run(["sh", "-c", "vm_stat"]) is None


def test_the_metal_preflight_reads_the_macs_memory_through_the_shim(tmp_path):
    plan = load_plan("m")
    found = preflight.plan_findings(plan, [], tmp_path, run=shim_host.answers(mac_facts()))
    assert any(f.level == "PASS" and f.text == "hw.memsize 69 GB" for f in found)  # 64 GiB in GB
    inside = preflight.plan_findings(plan, [], tmp_path, run=lambda argv: None)  # a container alone
    assert any(f.level == "FAIL" and "sysctl hw.memsize did not answer" in f.text for f in inside)


def test_without_a_shim_this_machine_is_read(monkeypatch):
    monkeypatch.delenv(shim_host.URL_ENV, raising=False)
    local = preflight_checks.run_text
    assert shim_host.host_run(local) is local
    snap = memory.host_snapshot()
    validate(snap, "memory-snapshot")
    assert snap["hostname"] == shim_host.host_name()


def test_a_shim_that_does_not_answer_says_what_to_do(monkeypatch, tmp_path):
    from harness.errors import ConfigError, EngineError
    from tests.conftest import free_port

    monkeypatch.setenv(shim_host.URL_ENV, f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv(shim_host.TOKEN_ENV, str(tmp_path / "token"))
    with pytest.raises(ConfigError, match="start the shim first"):
        shim_host.facts()
    (tmp_path / "token").write_text("x" * 20)
    with pytest.raises(EngineError, match="did not answer /v1/host"):
        memory.host_snapshot()


def test_mlx_lms_darwin_guard_reads_the_shims_host(tmp_path, monkeypatch):
    from harness.run.shim_allow import via_shim

    plan = load_plan("m")
    via_shim(plan, "host.docker.internal")
    targets = [t for t in preflight.plan_targets(plan, tmp_path, dry_run=True) if t.block.id == "mlx"]
    platform_fails = lambda: [  # noqa: E731
        f for f in preflight.plan_findings(plan, targets, tmp_path) if f.check == "platform"
    ]
    monkeypatch.setattr(shim_host, "facts", lambda url=None: mac_facts())
    assert platform_fails() == []  # the Mac behind the shim
    monkeypatch.setattr(shim_host, "facts", lambda url=None: {**mac_facts(), "system": "Linux"})
    assert [f.level for f in platform_fails()] == ["FAIL"]  # the guard still holds
