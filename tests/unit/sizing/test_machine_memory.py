"""Knowing the machine: its table entry from its CPU/GPU name, bandwidth over every core, the memory
a plan's tier is sized by (hw.memsize, memory.total, MemTotal), on recorded command output."""

from pathlib import Path

import pytest

from harness.sizing.arithmetic import speed_share, tier_for_memory
from harness.sizing import machines

CMD = Path(__file__).resolve().parents[2] / "fixtures" / "commands"


def answers(table: dict):
    return lambda cmd: table.get(tuple(cmd))


def test_known_machines_are_recognised_by_name():
    mac = answers({("sysctl", "-n", "machdep.cpu.brand_string"): "Apple M4 Max"})
    assert machines.identify(mac) == "m4-max"
    spark = answers({("nvidia-smi", "--query-gpu=name", "--format=csv,noheader"): "NVIDIA GB10"})
    assert machines.identify(spark) == "spark"
    card = answers({("nvidia-smi", "--query-gpu=name", "--format=csv,noheader"): "NVIDIA GeForce RTX 4090"})
    assert machines.identify(card) == "rtx-4090"


def test_bandwidth_uses_every_core_and_says_how():
    bw = machines.measure_bandwidth(threads=2, size_mib=8, repeats=2)
    assert bw.threads == 2 and bw.gb_s > 0
    assert bw.method == "2-thread copy of 8 MiB each, read + written"


def test_memory_for_the_tier_per_machine_kind(tmp_path):
    memsize = (CMD / "sysctl-hw.memsize.txt").read_text()
    mac = answers({("sysctl", "-n", "hw.memsize"): memsize.strip()})
    assert machines.memory_for_tier("metal", mac) == (64.0, "hw.memsize")
    assert machines.memory_for_tier("metal", answers({})) is None  # a Metal plan read on Linux
    card = answers({("nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"): "16376"})
    got = machines.memory_for_tier("nvidia", card)
    assert (
        got is not None and got[1] == "nvidia-smi memory.total" and got[0] == pytest.approx(15.99, abs=0.01)
    )
    gb10 = answers({("nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"): "[N/A]"})
    assert machines.memory_for_tier("nvidia", gb10) is None
    got = machines.memory_for_tier("rocm", answers({}), CMD / "proc-meminfo.txt")
    assert got is not None and got[1] == "MemTotal" and got[0] == pytest.approx(124.4, abs=0.1)


@pytest.mark.parametrize(
    "memory, tier",
    [(64.0, "32gb"), (32.0, "32gb"), (24.0, "24gb"), (15.99, "16gb"), (16.0, "16gb"), (8.0, None)],
)
def test_tier_is_the_largest_that_fits(memory, tier):
    assert tier_for_memory(["32gb", "24gb", "16gb"], memory) == tier


def test_tier_ignores_names_without_a_size():
    assert tier_for_memory(["small", "large"], 64.0) is None


@pytest.mark.parametrize(
    "rate, share, word",
    [
        (86, 0.77, "within"),
        (50, 0.45, "below"),
        (100, 0.90, "above the 60-85 %"),
        (120, 1.08, "above the limit"),
    ],
)
def test_speed_share_against_the_lab_band(rate, share, word):
    """Day 3's example: an M4 Max (546 GB/s) with a 4.9 GB model, limit 111 tok/s; 86 tok/s is 77 %."""
    got, reading = speed_share(rate, 546 / 4.9)
    assert round(got, 2) == share and reading.startswith(word)
