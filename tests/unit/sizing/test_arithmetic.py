import pytest

from harness.sizing.arithmetic import (
    kv_bytes_per_token,
    llama_kv_caches,
    llama_kv_log_line,
    speed_limit,
    vllm_kv_log_lines,
)


def test_kv_bytes_per_token_qwen3_8b():
    # 36 layers, 8 KV heads, head_dim 128 (SPEC.md: 147,456 bytes at f16)
    assert kv_bytes_per_token(36, 8, 128, "f16") == 147_456
    assert kv_bytes_per_token(36, 8, 128, "q8_0") == 147_456 / 2 * 34 / 32
    assert kv_bytes_per_token(36, 8, 128, "fp8") == 73_728


def test_pool_for_twenty_slots_of_8192():
    # seed 000: 20 x 8,192 x 147,456 bytes = 24,159,191,040 bytes = 23,040 MiB
    caches = llama_kv_caches(36, 8, 128, slots=20, ctx_per_slot=8192)
    assert caches[0]["bytes"] == 24_159_191_040
    assert "size = 23040.00 MiB" in llama_kv_log_line(caches[0])


def test_gemma3_sliding_window_caches_match_the_observed_log():
    lines = [
        llama_kv_log_line(c) for c in llama_kv_caches(18, 1, 256, 4, 2048, swa_layers=15, swa_window=512)
    ]
    assert lines == [
        "llama_kv_cache: size =   24.00 MiB (  2048 cells,   3 layers,  4/4 seqs), K (f16):   12.00 MiB, V "
        "(f16):   12.00 MiB",
        "llama_kv_cache: size =   60.00 MiB (  1024 cells,  15 layers,  4/4 seqs), K (f16):   30.00 MiB, V "
        "(f16):   30.00 MiB",
    ]


def test_vllm_lines_use_thousands_separators():
    assert vllm_kv_log_lines(81_920, 4096) == [
        "GPU KV cache size: 81,920 tokens",
        "Maximum concurrency for 4,096 tokens per request: 20.00x",
    ]


def test_speed_limit_seed_002():
    assert round(speed_limit(546, 4.9)) == 111
    with pytest.raises(ValueError):
        speed_limit(546, 0)
    with pytest.raises(ValueError, match="unknown cache type"):
        kv_bytes_per_token(1, 1, 1, "q3")
