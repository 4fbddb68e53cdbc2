"""The tiers true: each 16 GB tier predicted for the 16 GB machine it names, Track
X's fit against the GPU-visible share its device line reports, Task 1's batches B = 1, 5, 10, 20."""

from __future__ import annotations

from harness.report import predictions_shown as predict
from harness.engines.logs import device_memory
from harness.sizing.machines import lookup
from harness.report.measured import plan_machine
from harness.run.plans import load_plan


def predict_machine(plan) -> str:
    (stage,) = [
        s for s in plan.steps if s.kind == "predict" and "machine" in s.options and "table" not in s.options
    ]
    return stage.options["machine"]


def test_each_tier_predicts_for_its_own_machine():
    for track, tier, key, memory in (
        ("track-n", "24gb", "rtx-4090", 24),
        ("track-n", "16gb", "rtx-4080", 16),
        ("track-m", "16gb", "m4", 16),
    ):
        plan = load_plan(track, tier)
        assert predict_machine(plan) == key and plan_machine(plan) == key
        assert lookup(key)["memory_gb"] == memory
    assert predict_machine(load_plan("track-m", "32gb")) == "m4-max"


def test_16gb_card_fits_the_eight_bit_tier_and_not_f16(capsys):
    from harness.cli import main

    main(["predict", "--machine", "rtx-4080", "--cache-type", "q8_0"])
    assert "weights (GGUF Q4_K_M) + pool = 10.65 GiB before compute buffers against 16 GB usable -> fits" in (
        capsys.readouterr().out
    )
    main(["predict", "--machine", "rtx-4080"])
    assert "15.93 GiB before compute buffers against 16 GB usable -> does NOT fit" in capsys.readouterr().out


def test_track_x_fits_against_the_visible_share(capsys):
    line = "  Vulkan0: AMD Radeon 8060S Graphics (RADV GFX1151) (98304 MiB, 97000 MiB free)\n"
    text = "Available devices:\n" + line
    assert device_memory(text) == [
        {
            "device": "Vulkan0",
            "name": "AMD Radeon 8060S Graphics (RADV GFX1151)",
            "total_mib": 98304,
            "free_mib": 97000,
        }
    ]
    assert predict.visible_gb("llama-server", print, run=lambda b: text) == 97000 * 2**20 / 1e9
    assert "Vulkan0 97,000 MiB free of 98,304 MiB" in capsys.readouterr().out
    assert predict.visible_gb("llama-server", print, run=lambda b: "Available devices:\n") is None
    (stage,) = [
        s for s in load_plan("track-x").steps if s.kind == "predict" and s.options.get("machine") == "strix"
    ]
    assert stage.options["usable_from"].endswith("/llama.cpp/build/bin/llama-server")


def test_aggregate_ceilings_at_the_labs_batches(capsys):
    assert predict.batches(20) == [1, 5, 10, 20] and predict.batches(10) == [1, 5, 10]
    assert predict.batches(4) == [1, 4]
    from harness.cli import main

    main(["predict", "--machine", "spark"])
    out = capsys.readouterr().out
    # the serving lab's Task 1 output, Spark 273 GB/s
    assert "context   100: B=1 58 (58.3)  B=5 288 (57.5)  B=10 566 (56.6)  B=20 1099 (55.0)" in out
    assert "context  1500: B=1 56 (55.8)  B=5 236 (47.3)  B=10 397 (39.7)  B=20 600 (30.0)" in out


def test_the_preflight_checks_the_tier_against_the_machines_memory(tmp_path):
    """The serving lab's preflight: hw.memsize (Mac) or memory.total (NVIDIA) decides the lab.env."""
    from harness.run import guards, preflight

    assert guards.tier_finding("24gb", ["24gb", "16gb"], (23.99, "nvidia-smi memory.total")).level == "PASS"
    warn = guards.tier_finding("24gb", ["24gb", "16gb"], (15.99, "nvidia-smi memory.total"))
    assert (warn.level, warn.text) == (
        "WARN",
        "tier 24gb was chosen, but nvidia-smi memory.total reads 16.0 GiB: run with --tier 16gb",
    )
    assert guards.tier_finding("mac", ["mac", "spark"], (48.0, "hw.memsize")) is None  # tiers not sized
    assert guards.tier_finding("24gb", ["24gb"], None) is None  # not this kind of machine

    def smi(argv):  # a 16 GB card answering nvidia-smi
        return "16376\n" if "--query-gpu=memory.total" in argv else None

    plan = load_plan("track-n", "24gb")
    found = preflight.plan_findings(plan, [], tmp_path, run=smi)
    assert any(f.check == "tier" and f.level == "WARN" and "--tier 16gb" in f.text for f in found)
