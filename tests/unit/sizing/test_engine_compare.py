"""Task 9 arithmetic of the engine comparison against the figures the course page prints."""

import pytest

from harness.sizing import format_compare as ec
from harness.sizing.machines import visible_memory_rules
from harness.engines.models.info import from_table

MODEL = from_table("qwen3-8b")
F = MODEL.formats
KV = 147_456


@pytest.mark.parametrize(
    "quant, expected",
    [
        ("Q4_K_M", "GGUF Q4_K_M"),
        ("Q4_K_M, KV q8_0", "GGUF Q4_K_M"),
        ("bf16", "bf16"),
        ("bf16 (from Q4_K_M)", "bf16"),
        ("MLX 4-bit, group size 64", "MLX 4-bit g64"),
        ("EXL3 4.0 bpw, head 6 bpw", "EXL3 4.0 bpw"),
        ("AWQ", "AWQ 4-bit g128"),
        ("made-up (practice kit)", None),
        ("", None),
    ],
)
def test_format_named_by_the_quant(quant, expected):
    assert ec.format_for_quant(quant, F) == expected


def test_a_converted_models_source_format_is_not_its_format():
    gguf_only = {"GGUF Q4_K_M": F["GGUF Q4_K_M"]}  # what a Q4_K_M GGUF file describes
    assert ec.format_for_quant("Q4_K_M", gguf_only) == "GGUF Q4_K_M"
    assert ec.format_for_quant("bf16 (from Q4_K_M)", gguf_only) is None  # vLLM served bf16


@pytest.mark.parametrize(
    "native, printed",
    [
        ("bf16", 0.31),
        ("GGUF Q4_K_M", 1.00),
        ("MLX 4-bit g64", 1.10),
        ("EXL3 4.0 bpw", 1.18),
        ("AWQ 4-bit g128", 0.96),
    ],
)
def test_predicted_ratios_are_the_lab_table(native, printed):
    """Track S 4.67/15.14 = 0.31, X 1.00, M 4.67/4.26 = 1.10, N EXL3 1.18, N AWQ 0.96."""
    assert round(ec.predicted_ratio(F[native], F["GGUF Q4_K_M"]), 2) == printed


def test_ratio_verdicts():
    assert ec.ratio_verdict(0.31, 0.31) == "as predicted"
    assert ec.ratio_verdict(0.25, 0.31) == "lower"
    assert ec.ratio_verdict(0.40, 0.31) == "higher"


@pytest.mark.parametrize(
    "engine, fmt, vm_stat, expected",
    [
        ("llama.cpp", "GGUF Q4_K_M", False, (5_879_726_080, 5_879_726_080)),
        ("lemonade-rocm", "GGUF Q4_K_M", False, (5_879_726_080, 5_879_726_080)),
        ("exllamav3", "EXL3 4.0 bpw", False, (5_153_975_040, 5_153_975_040)),
        ("vllm", "AWQ 4-bit g128", False, (7_440_656_384, 7_440_656_384)),
        ("tensorrt-llm", "bf16", False, (17_589_430_272, 17_589_430_272)),
        ("llama.cpp", "GGUF Q4_K_M", True, (1_207_959_552, 6_229_786_624)),
    ],
)
def test_visible_bytes_are_the_lab_table(engine, fmt, vm_stat, expected):
    name, rule = ec.rule_for(engine, visible_memory_rules())
    tokens = ec.cache_tokens(rule, 8192, None)
    assert ec.visible_bytes(rule, F[fmt], KV, tokens, vm_stat) == expected


def test_mlx_cache_grows_in_steps():
    _, rule = ec.rule_for("mlx-lm", visible_memory_rules())
    tokens = ec.cache_tokens(rule, 8192, 1378 + 128)
    assert tokens == 1536
    assert ec.visible_bytes(rule, F["MLX 4-bit g64"], KV, tokens, True) == (4_834_224_128,) * 2
    with pytest.raises(ValueError):
        ec.cache_tokens(rule, 8192, None)


def test_overhead_is_the_labs_example():
    """llama-server on Track N adding 6,400 MB: 6,400 - 5,880 = 520 MB."""
    low, high = ec.overhead_mb(6400, (5_879_726_080, 5_879_726_080))
    assert round(low) == round(high) == 520


def test_unknown_engine_has_no_rule():
    assert ec.rule_for("sglang", visible_memory_rules()) is None
    with pytest.raises(ValueError):
        ec.share(10, 0)
