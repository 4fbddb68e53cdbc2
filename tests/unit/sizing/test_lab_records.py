"""What each lab records and checks: --expect-device in the serving lab's
verify-allocation steps (Task 2: CUDA0 on S and N, Vulkan0 on X, MTL0 on M), and the engines lab's
two model buffers checked against their sum (Task 4: about 4,789 MiB, about 334 MiB on the host)."""

from __future__ import annotations

import pytest

from harness.engines import logs as engine_logs
from harness.engines.models.info import load_model
from harness.run.plans import load_plan
from tests.conftest import FIXTURES

LOG = FIXTURES / "logs" / "composed" / "llama-hip-control-qwen3-8b.log"


@pytest.mark.parametrize("track,device", [("s", "CUDA0"), ("n", "CUDA0"), ("x", "Vulkan0"), ("m", "MTL0")])
def test_serving_lab_blocks_expect_the_tracks_device(track, device):
    plan = load_plan(f"track-{track}")
    steps = [s for s in plan.steps if s.kind == "verify-allocation" and s.block.engine.name == "llama-server"]
    assert len(steps) == 4 and all(s.options.get("expect_device") == device for s in steps)


def test_model_buffers_add_up_to_the_file_and_the_host_holds_the_embedding():
    fmt = load_model("qwen3-8b").formats["GGUF Q4_K_M"]
    observed = engine_logs.parse_llama_server(LOG.read_text())
    assert observed["model_buffers_mib"] == {"ROCm0": 4455.35, "CPU_Mapped": 333.84}
    assert engine_logs.buffer_problems(observed, fmt) == []
    spilled = {**observed, "model_buffers_mib": {"ROCm0": 3589.19, "CPU_Mapped": 1200.0}}
    (problem,) = engine_logs.buffer_problems(spilled, fmt)
    assert problem.startswith("CPU_Mapped model buffer 1,200.00 MiB, but the input embedding is 333.84 MiB")
    other = {**observed, "model_buffers_mib": {"ROCm0": 6000.0, "CPU_Mapped": 333.84}}
    assert (
        "= 6,333.84 MiB, but the model file's tensors are 4,789.19 MiB"
        in engine_logs.buffer_problems(other, fmt)[0]
    )
    # a CPU build (no device buffer) is not judged: it may repack weights into more buffers
    assert engine_logs.buffer_problems({"model_buffers_mib": {"CPU_Mapped": 17.57}}, fmt) == []


def test_memory_fraction_change_set_against_the_pool_change():
    """Serving lab Task 9: from fraction A to B the pool moves by about (B - A) x the total."""
    from types import SimpleNamespace

    from harness.sizing.predictions import fraction_change
    from harness.report import lab_records

    got = fraction_change(
        {"fraction": 0.4, "available_kv_gib": 30.0}, {"fraction": 0.5, "available_kv_gib": 41.9}, 119.0
    )
    assert got["measured_gib"] == pytest.approx(11.9) and got["predicted_gib"] == pytest.approx(11.9)
    assert got["share"] == pytest.approx(1.0)
    plan = load_plan("track-x")
    recs = [
        {"record": "allocation", "label": "vllm-mem-b", "observed": {"available_kv_gib": 41.9}},
        {"record": "allocation", "label": "vllm-mem-a", "observed": {"available_kv_gib": 30.0}},
        {"record": "allocation", "label": "llama", "observed": {}},
    ]
    r = SimpleNamespace(
        plan=plan, steps_of=lambda kind: [], records=lambda kind, select: [x for x in recs if select(x)]
    )
    text = "\n".join(lab_records.fraction_section(r))
    # 128 GB = 119.21 GiB: (0.5 - 0.4) x 119.21 = 11.92 GiB predicted, 11.90 measured
    assert "vllm-mem-a at 0.4: 30.00 GiB available for the KV cache; vllm-mem-b at 0.5: 41.90 GiB" in text
    assert "The pool changed by +11.90 GiB; (0.5 - 0.4) x 119.21 GiB (Ryzen AI Max+ 395) = +11.92 GiB" in text
    (_, _, absent, _) = lab_records.fraction_section(
        SimpleNamespace(plan=plan, steps_of=lambda kind: [], records=lambda k, s: recs[2:])
    )
    assert absent.startswith("_No fraction change: the plan starts vllm-mem-a, vllm-mem-b at their memory")
    assert "was read for none (no verify-allocation record" in absent
    no_fractions = load_plan("track-m")
    assert (
        lab_records.fraction_section(
            SimpleNamespace(plan=no_fractions, steps_of=lambda kind: [], records=lambda k, s: recs)
        )
        == []
    )


def test_mtl0_mapped_beside_the_vm_stat_delta(tmp_path):
    """Engines lab Task 9 on Track M: the load log's MTL0_Mapped line written beside vm_stat's delta."""
    from harness.sizing.machines import visible_memory_rules
    from harness.records.notebook import append_record
    from harness.report.engine_verdicts import memory_rows
    from harness.report.measured import mapped_mib

    book = tmp_path / "labbook.md"
    assert mapped_mib(book) is None
    rec = {
        "harness_schema": 1,
        "record": "allocation",
        "label": "control",
        "engine": "llama-server",
        "model": "m",
        "log": "x.log",
        "settings": {},
        "observed": {"model_buffers_mib": {"MTL0_Mapped": 4455.35, "CPU_Mapped": 333.84}},
        "predicted": {"log_lines": [], "pool_bytes": 0.0, "vllm_tokens": None},
        "verdict": "match",
        "problems": [],
    }
    book.write_text("")
    append_record(book, rec, "allocation")
    assert mapped_mib(book) == 4455.35
    speed = {
        "engine": "llama.cpp",
        "backend": "Metal",
        "context_length": 8192,
        "quant": "Q4_K_M",
        "memory_delta_mb": {"mac_used_mb": 3000},
    }
    (row,) = memory_rows(
        ["llama.cpp"],
        {"llama.cpp": {"short": speed, "long": speed}},
        load_model("qwen3-8b"),
        {"llama.cpp": "GGUF Q4_K_M"},
        visible_memory_rules(),
        4455.35,
    )
    assert row[-1].endswith("(the load log's MTL0_Mapped model buffer: 4,455.35 MiB)")


def test_trtllm_guided_decoder_line_read_from_its_log(tmp_path):
    """Engines lab Task 7 on Track S: the 'Guided decoder initialized ... XGRAMMAR' line, found or not."""
    from harness.report.lab_records import log_lines

    log = tmp_path / "trtllm.out"
    log.write_text(
        "[TRT-LLM] [I] Loading model\n"
        "[TRT-LLM] [I] Guided decoder initialized with backend: GuidedDecodingBackend.XGRAMMAR\n"
    )
    started = {"trtllm": {"engine": "trtllm-compose", "log": str(log)}, "llama": {"engine": "llama-server"}}
    (line, _) = log_lines(started)
    assert line.startswith(
        "- trtllm's log shows `[TRT-LLM] [I] Guided decoder initialized with backend: "
        "GuidedDecodingBackend.XGRAMMAR`: xgrammar guided decoding is on"
    )
    log.write_text("[TRT-LLM] [I] Loading model\n")
    assert (
        "has no line matching `Guided decoder initialized with backend: .*XGRAMMAR`" in log_lines(started)[0]
    )


# vLLM's CPU build 0.32.0 in Track S's rehearsal (2026-12-02, its vllm-mem-a and vllm-mem-b logs): it
# prints no "Available KV cache memory" line but the pool and the total it took a share of.
CPU_MEM_A = (
    "(Worker pid=74) INFO 12-02 17:02:39 [cpu_worker.py:260] Auto set (0.85/17.84) GiB for KV cache on "
    "node 0, with 2.68 GiB requested memory for the worker. 1.83 GiB memory was consumed by non-kv usages.\n"
    "(EngineCore pid=54) INFO 12-02 17:02:39 [kv_cache_utils.py:2327] CPU KV cache size: 69,183 tokens, "
    "Maximum concurrency for 4,096 tokens per request: 16.89x\n"
)
CPU_MEM_B = CPU_MEM_A.replace("(0.85/17.84)", "(1.73/17.84)").replace("69,183", "141,596")


def test_vllm_cpu_builds_fraction_change_set_against_the_total_its_log_names():
    """A rehearsal's memory-fraction blocks: the CPU worker's own total (this machine's), not the
    Spark's 128 GB, is what the fraction is a share of."""
    from types import SimpleNamespace

    from harness.report import lab_records

    seen = engine_logs.parse_vllm(CPU_MEM_A)
    assert (seen["cpu_kv_gib"], seen["memory_total_gib"], seen["kv_tokens"]) == (0.85, 17.84, 69183)
    assert "available_kv_gib" not in seen  # verify-allocation's GPU pool arithmetic is not asked of it
    recs = [
        {"record": "allocation", "label": "vllm-mem-a", "observed": seen},
        {"record": "allocation", "label": "vllm-mem-b", "observed": engine_logs.parse_vllm(CPU_MEM_B)},
    ]
    plan = load_plan("track-s", rehearse_it=True)  # the overlay's fractions: 0.15 and 0.20
    r = SimpleNamespace(
        plan=plan, steps_of=lambda kind: [], records=lambda kind, select: [x for x in recs if select(x)]
    )
    text = "\n".join(lab_records.fraction_section(r))
    # (0.20 - 0.15) x 17.84 = 0.892 GiB predicted; 1.73 - 0.85 = 0.88 measured
    assert (
        "The pool changed by +0.88 GiB; (0.2 - 0.15) x 17.84 GiB (the memory vLLM's CPU worker counts on "
        "this machine, from its log) = +0.89 GiB predicted (0.99 of it)"
    ) in text


# The device line of a 64 GB Ryzen AI Max+ as llama-server --list-devices prints it (Vulkan, with
# the GPU-visible cap of Part 5), joined into the preflight's accelerator finding.
DEVICE_64 = "Vulkan0: AMD Radeon 8060S Graphics (RADV GFX1151) (32768 MiB, 31500 MiB free)"


def test_the_fraction_is_a_share_of_the_visible_total_the_device_line_reported():
    """The report's (B - A) x total uses the device line's total, not 128 GB."""
    from types import SimpleNamespace

    from harness.report import lab_records

    plan = load_plan("track-x")
    recs = [
        {"record": "allocation", "label": "vllm-mem-a", "observed": {"available_kv_gib": 10.0}},
        {"record": "allocation", "label": "vllm-mem-b", "observed": {"available_kv_gib": 13.2}},
    ]
    pre = [{"result": {"findings": [{"level": "PASS", "check": "accelerator", "text": DEVICE_64}]}}]
    r = SimpleNamespace(
        plan=plan, steps_of=lambda kind: pre if kind == "preflight" else [], records=lambda k, s: recs
    )
    text = "\n".join(lab_records.fraction_section(r))
    assert "(0.5 - 0.4) x 32.00 GiB (Vulkan0 32,768 MiB (the device line)) = +3.20 GiB" in text


def test_a_fraction_below_the_bf16_weights_fails_with_the_labs_remedy():
    """On 64 GB, fraction x the visible total must exceed the 15.26 GiB of bf16
    weights; else raise both by 0.2 and record the values."""
    from harness.run import guards
    from harness.run.preflight_checks import Finding, llama_devices

    plan = load_plan("track-x")
    seen = [llama_devices(f"Available devices:\n  {DEVICE_64}\n")]  # the preflight's own finding
    found = guards.memory_fractions(plan, seen)
    assert [f.level for f in found] == ["FAIL", "PASS"]  # 0.5 x 32 GiB = 16.00 GiB clears 15.26
    assert found[0].text.startswith(
        "vllm-mem-a: fraction 0.4 x 32.00 GiB visible (Vulkan0 32,768 MiB (the device line)) = 12.80 GiB, "
        "not above the 15.26 GiB of bf16 weights"
    )
    assert (
        "raise both fractions by 0.2 (vllm-mem-a 0.60, vllm-mem-b 0.70: --set MEM_FRACTION_A=0.60 "
        "--set MEM_FRACTION_B=0.70) and record the values" in found[0].text
    )
    raised = load_plan("track-x", overrides={"MEM_FRACTION_A": "0.60", "MEM_FRACTION_B": "0.70"})
    assert [f.level for f in guards.memory_fractions(raised, seen)] == ["PASS", "PASS"]  # the remedy works
    big = [Finding("PASS", "accelerator", DEVICE_64.replace("32768 MiB", "98304 MiB"))]
    assert [f.level for f in guards.memory_fractions(plan, big)] == ["PASS", "PASS"]
    assert guards.memory_fractions(plan, []) == []  # no device line: nothing to judge
