"""A vLLM memory fraction turned into blocks, tokens and maximum concurrency from the memory its log
says was available for the cache (serving lab, Task 9), and checked against the pool it logged."""

from pathlib import Path

import pytest

from harness.cli import main
from harness.sizing.predictions import fraction_check, fraction_pool
from harness.engines.models.info import from_table

LOG = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "vllm-fraction-illustrative.log"
MODEL = from_table("qwen3-8b")


def test_the_labs_worked_example():
    """7.00 GiB: 7,516,192,768 / (16 x 147,456) = 3,185 blocks, 50,960 tokens, 3,185 / 256 = 12.44x."""
    pool = fraction_pool(MODEL, 7.00, 4096)
    assert (pool["available_bytes"], pool["block_bytes"], pool["num_blocks"]) == (
        7_516_192_768,
        2_359_296,
        3185,
    )
    assert pool["tokens"] == 50_960 and pool["blocks_per_request"] == 256
    assert round(pool["max_concurrency"], 2) == 12.44
    assert pool["tokens_range"][0] < 50_960 < pool["tokens_range"][1]


def test_the_fp8_tier_halves_the_block():
    pool = fraction_pool(MODEL, 7.00, 4096, cache_type="fp8")
    assert pool["block_bytes"] == 16 * 73_728 and pool["num_blocks"] == 7_516_192_768 // (16 * 73_728) == 6371


@pytest.mark.parametrize(
    "observed, problems",
    [
        ({"kv_tokens": 50_960, "max_concurrency": 12.44}, 0),
        ({"kv_tokens": 50_992, "max_concurrency": 12.45}, 0),  # within the two-decimal GiB rounding
        ({"kv_tokens": 60_000, "max_concurrency": 12.44}, 1),
        ({"kv_tokens": 50_960, "max_concurrency": 6.22}, 1),
    ],
)
def test_the_log_is_checked(observed, problems):
    assert len(fraction_check(observed, fraction_pool(MODEL, 7.00, 4096))[1]) == problems


def test_verify_allocation_works_the_fraction_out(tmp_path, capsys):
    args = [
        "verify-allocation",
        "--log",
        str(LOG),
        "--engine",
        "vllm",
        "--model",
        "qwen3-8b",
        "--slots",
        "20",
    ]
    args += ["--ctx-per-slot", "4096", "--observe-only"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "3,185 blocks = 50,960 tokens; 3,185 / 256 blocks per request = 12.44x" in out
    bad = tmp_path / "bad.log"
    bad.write_text(LOG.read_text().replace("50,960 tokens", "60,000 tokens"))
    assert main([*args[:2], str(bad), *args[3:]]) == 1
    assert (
        "MISMATCH: KV pool: log says 60,000 tokens but its available memory gives 50,960"
        in capsys.readouterr().out
    )
