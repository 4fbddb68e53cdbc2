"""Day 3's plan (practice server, then the real model with 8 seats, crowds 1-16, the 500 ms promise,
copies for a peak) and a plan's memory tier chosen from the machine's memory when none is given."""

from pathlib import Path

import pytest

from harness.sizing import machines
from harness.run.plans import load_plan
from harness.run.steps import step_calls

CMD = Path(__file__).resolve().parents[2] / "fixtures" / "commands"


def test_day3_runs_the_real_model_crowd_after_the_practice_server(tmp_path):
    plan = load_plan("day3")
    assert plan.tier == "mac" and plan.variables["MACHINE"] == "m4-pro"
    sweeps = [(s.block.id, s.options) for s in plan.steps if s.kind == "sweep"]
    assert [b for b, _ in sweeps] == ["practice", "real"]
    assert {o["concurrency"] for _, o in sweeps} == {"1,2,4,8,16"}
    real = plan.blocks["real"]
    assert real.engine.name == "llama-server" and real.settings["slots"] == 8
    summarise = [s for s in plan.steps if s.kind == "summarise"][0]
    argv = step_calls(plan, tmp_path, tmp_path / "labbook.md", summarise, None)[1].to_argv()
    assert argv[argv.index("--label") + 1] == "day3-real"
    assert argv[argv.index("--promise") + 1 :][:5] == ["0.5", "--peak", "120", "--spares", "0.2"]
    assert load_plan("day3", "spark").variables["ACCELERATOR"] == "nvidia"


@pytest.mark.parametrize("memsize, tier", [("68719476736", "32gb"), ("17179869184", "16gb"), (None, "32gb")])
def test_a_mac_plans_tier_follows_hw_memsize(monkeypatch, memsize, tier):
    """Track M on a 64 GB Mac takes the 32 GB tier, on a 16 GB Mac the 16 GB tier; where hw.memsize does
    not answer (not a Mac) the plan's default stands."""
    monkeypatch.setattr(
        machines, "_run", lambda cmd: memsize if cmd[:3] == ["sysctl", "-n", "hw.memsize"] else None
    )
    assert load_plan("m").tier == tier
    assert load_plan("m", "16gb").tier == "16gb"  # a tier given is never overridden


def test_an_nvidia_plans_tier_follows_the_cards_memory(monkeypatch):
    monkeypatch.setattr(machines, "_run", lambda cmd: "16376" if "--query-gpu=memory.total" in cmd else None)
    assert load_plan("n").tier == "16gb"


def test_a_docker_run_engine_is_measured_by_its_container(tmp_path):
    """TensorRT-LLM started with `docker run` (engines/trtllm.yaml): measure reads the container's own
    memory, not the docker client's pid."""
    from harness.run.context import block_context

    plan_file = tmp_path / "one.yaml"
    plan_file.write_text(
        "schema_version: 1\nname: one\ntitle: one\nvariables: {}\nstages:\n"
        "  - id: trt\n    engine: trtllm\n    settings: {image: nvcr.io/nvidia/tensorrt-llm/release:1.2.1}\n"
        "    record: {quant: bf16}\n    steps: [measure]\n"
    )
    plan = load_plan(str(plan_file))
    ctx = block_context(plan, plan.blocks["trt"], tmp_path, dry_run=True)
    ctx.state.pid = 999
    step = [s for s in plan.steps if s.kind == "measure"][0]
    argv = step_calls(plan, tmp_path, tmp_path / "labbook.md", step, ctx)[0].to_argv()
    assert argv[argv.index("--container") + 1] == "trtllm-lab" and "--server-pid" not in argv
