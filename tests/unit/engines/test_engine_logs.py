"""Load-log parsing on recorded logs: a real CPU llama-server (Gemma 3 270M) and the practice
server's vLLM-style and llama-style logs (tests/fixtures/logs, see its README)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.engines import logs as engine_logs
from harness.sizing.arithmetic import llama_kv_caches, llama_kv_log_line
from tests.conftest import FIXTURES
from tests.corpus_samples import CORPUS

LOGS = FIXTURES / "logs"
# Gemma 3 270M as the server reported it: 18 layers, 15 of them on a 512-token sliding window.
GEMMA = dict(layers=18, kv_heads=1, head_dim=256, swa_layers=15, swa_window=512)


def log(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8", errors="replace")


def test_real_llama_server_log_gives_both_caches_slots_and_buffers():
    facts = engine_logs.parse_llama_server(log("llama-server-gemma3-cpu.log"))
    assert facts["kv_caches"] == [
        {"mib": 24.0, "cells": 2048, "layers": 3, "seqs": 4, "streams": 4, "k_type": "f16", "v_type": "f16"},
        {"mib": 60.0, "cells": 1024, "layers": 15, "seqs": 4, "streams": 4, "k_type": "f16", "v_type": "f16"},
    ]
    assert (facts["n_slots"], facts["n_ctx_slot"]) == (4, 2048)
    assert facts["model_buffers_mib"] == {"CPU_Mapped": 235.16}
    assert facts["compute_buffers_mib"] == {"CPU": 21.28}
    assert "offloaded_layers" not in facts  # a CPU build offloads nothing
    assert facts["prompt_cache_disabled"] is True  # the harness starts it with --cache-ram 0


def test_real_log_is_recognised_and_its_pool_is_the_full_attention_cache():
    text = log("llama-server-gemma3-cpu.log")
    assert engine_logs.detect_engine(text) == "llama-server"
    assert engine_logs.pool_tokens("llama-server", engine_logs.parse_llama_server(text)) == 2048 * 4


def test_real_log_agrees_with_the_arithmetic_and_a_wrong_prediction_is_named():
    text = log("llama-server-gemma3-cpu.log")
    caches = llama_kv_caches(slots=4, ctx_per_slot=2048, cache_type="f16", **GEMMA)
    right = SimpleNamespace(caches=caches, log_lines=[llama_kv_log_line(c, "f16") for c in caches])
    assert engine_logs.compare("llama-server", engine_logs.parse_llama_server(text), right) == []
    caches8 = llama_kv_caches(slots=8, ctx_per_slot=2048, cache_type="q8_0", **GEMMA)
    wrong = SimpleNamespace(caches=caches8, log_lines=[llama_kv_log_line(c, "q8_0") for c in caches8])
    problems = engine_logs.compare("llama-server", engine_logs.parse_llama_server(text), wrong)
    assert len(problems) == 2
    assert "slots (log 4 seqs, predicted 8)" in problems[0]
    assert "cache type (log f16, predicted q8_0)" in problems[0]


def test_practice_vllm_log_gives_the_pool_and_concurrency():
    text = log("practice-vllm.log")
    facts = engine_logs.parse_vllm(text)
    assert facts == {"kv_tokens": 81_920, "kv_device": "GPU", "max_model_len": 4096, "max_concurrency": 20.0}
    assert engine_logs.detect_engine(text) == "vllm"
    assert engine_logs.pool_tokens("vllm", facts) == 81_920
    assert engine_logs.parse_llama_server(text)["kv_caches"] == []


def test_vllm_pool_mismatch_names_both_figures():
    facts = engine_logs.parse_vllm(log("practice-vllm.log"))
    assert engine_logs.compare("vllm", facts, SimpleNamespace(vllm_tokens=81_920)) == []
    (problem,) = engine_logs.compare("vllm", facts, SimpleNamespace(vllm_tokens=40_000))
    assert "log says 81,920 tokens but the prediction is 40,000 tokens" in problem
    assert (
        "has no KV pool line the harness knows ('GPU KV cache size: N tokens'"
        in (engine_logs.compare("vllm", {}, SimpleNamespace(vllm_tokens=1))[0])
    )


def test_practice_llama_style_log_is_llama_server():
    text = log("practice-kit.log")
    assert engine_logs.detect_engine(text) == "llama-server"
    facts = engine_logs.parse_llama_server(text)
    assert engine_logs.pool_tokens("llama-server", facts) == 8 * 4096  # the kit's 8 seats of 4,096


@pytest.mark.parametrize("text", ["", "INFO: some other program started\n"])
def test_logs_of_other_programs_are_not_recognised(text):
    assert engine_logs.detect_engine(text) is None
    assert engine_logs.pool_tokens("llama-server", engine_logs.parse_llama_server(text)) is None
    assert engine_logs.parse_vllm(text) == {}


def test_older_builds_print_slot_count_and_context_apart():
    old = (
        "srv init: initializing slots, n_slots = 2\nslot init: id 0 | task -1 | new slot n_ctx_slot = 1024\n"
    )
    facts = engine_logs.parse_llama_server(old)
    assert (facts["n_slots"], facts["n_ctx_slot"]) == (2, 1024)
    assert engine_logs.detect_engine(old) == "llama-server"


def test_a_log_without_cache_lines_asks_for_verbosity():
    (problem,) = engine_logs.compare(
        "llama-server", {"kv_caches": []}, SimpleNamespace(caches=[{}], log_lines=[])
    )
    assert "--verbosity 4" in problem


def test_a_unified_cache_matches_a_unified_prediction_and_a_per_slot_one_names_the_cause():
    # A real ROCm log (tests/corpus): 4 sequences in 1 stream of 128,000 cells, 62 layers, 8 x 128 f16
    text = (CORPUS / "llama" / "llama-gh17086-rocm-mi50-vega7-unified-4of1-128k.log").read_text()
    facts = engine_logs.parse_llama_server(text)
    shape = dict(layers=62, kv_heads=8, head_dim=128, slots=4, ctx_per_slot=32_000, cache_type="f16")

    def prediction(unified: bool) -> SimpleNamespace:
        caches = llama_kv_caches(unified=unified, **shape)
        return SimpleNamespace(caches=caches, log_lines=[llama_kv_log_line(c, "f16") for c in caches])

    assert engine_logs.pool_tokens("llama-server", facts) == 128_000
    unified = prediction(True)
    assert "(128000 cells,  62 layers,  4/1 seqs)" in unified.log_lines[0]
    assert engine_logs.compare("llama-server", facts, unified) == []
    (problem,) = engine_logs.compare("llama-server", facts, prediction(False))
    assert "the log's cache is unified (4 sequences share one stream of 128,000 cells" in problem
    assert "context per slot (log 128000 cells, predicted 32000" in problem


@pytest.mark.parametrize(
    "line,device,name,free",
    [
        # tests/corpus/llama: llama.cpp's CI on a T4 over Vulkan, a new CUDA build with its PCI id
        (
            "0.00.000.547 I llama_model_load_from_file: using device Vulkan0 (Tesla T4) - 16384 MiB free",
            "Vulkan0",
            "Tesla T4",
            16384,
        ),
        (
            "llama_model_load_from_file_impl: using device CUDA0 (NVIDIA A100-PCIE-40GB) (0000:00:0c.0) "
            "- 39903 MiB free",
            "CUDA0",
            "NVIDIA A100-PCIE-40GB",
            39903,
        ),
        # this machine's software Vulkan device: its name holds parentheses, its id is unknown
        (
            "llama_model_load_from_file_impl: using device Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits)) "
            "(unknown id) - 2048 MiB free",
            "Vulkan0",
            "llvmpipe (LLVM 15.0.6, 256 bits)",
            2048,
        ),
    ],
)
def test_the_device_line_gives_the_devices_name_and_free_memory(line, device, name, free):
    facts = engine_logs.parse_llama_server(line)
    assert facts["devices"] == [device]
    assert facts["device_names"] == {device: {"name": name, "free_mib": free}}
