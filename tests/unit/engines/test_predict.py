"""Predictions: the labs' printed tables digit for digit, configurations, and verify-allocation."""

import pytest

from harness.cli import main
from harness.errors import ConfigError
from harness.engines.models.info import from_table, load_model
from harness.sizing.predictions import predict_allocation
from tests.conftest import FIXTURES

EXPECTED = FIXTURES / "expected"


@pytest.mark.parametrize("table,expected", [("lab09", "lab09-task1.txt"), ("lab08", "lab08-task1.txt")])
def test_lab_tables_digit_for_digit(table, expected, capsys):
    assert main(["predict", "--model", "qwen3-8b", "--table", table]) == 0
    assert capsys.readouterr().out == EXPECTED.joinpath(expected).read_text()


def test_lab_log_lines_for_the_tiers():
    qwen = from_table("qwen3-8b")
    assert predict_allocation(qwen, "llama-server", 20, 4096, "f16").log_lines == [
        "llama_kv_cache: size = 11520.00 MiB (  4096 cells,  36 layers, 20/20 seqs), K (f16): 5760.00 MiB, "
        "V (f16): 5760.00 MiB"
    ]
    assert (
        predict_allocation(qwen, "llama-server", 20, 4096, "q8_0")
        .log_lines[0]
        .startswith(
            "llama_kv_cache: size = 6120.00 MiB (  4096 cells,  36 layers, 20/20 seqs), K (q8_0): 3060.00 MiB"
        )
    )
    vllm = predict_allocation(qwen, "vllm", 20, 4096, "fp8")
    assert (vllm.vllm_tokens, vllm.vllm_blocks) == (81_920, 5_120)
    assert vllm.log_lines[1] == "Maximum concurrency for 4,096 tokens per request: 20.00x"


def test_bad_inputs_are_clear(tmp_path, capsys):
    not_gguf = tmp_path / "model.gguf"
    not_gguf.write_bytes(b"not a gguf file at all")
    with pytest.raises(ConfigError, match="not a readable GGUF file"):
        load_model(str(not_gguf))
    with pytest.raises(ConfigError, match="not in"):
        load_model("no-such-model")
    other = tmp_path / "other.log"
    other.write_text("INFO: some other program started\n")
    assert main(["verify-allocation", "--log", str(other)]) == 2
    assert "no llama-server, vLLM or TensorRT-LLM lines this harness knows" in capsys.readouterr().err
    assert main(["verify-allocation", "--log", str(tmp_path / "missing.log")]) == 2


def test_one_configuration_prints_every_cache_type_format_and_batch(capsys):
    assert (
        main(
            [
                "predict",
                "--model",
                "qwen3-8b",
                "--slots",
                "20",
                "--ctx-per-slot",
                "4096",
                "--machine",
                "spark",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "f16 147,456, q8_0 78,336, q4_0 41,472, fp8 73,728" in out
    assert (
        "weights (GGUF Q4_K_M) + pool = 15.93 GiB before compute buffers against 128 GB usable -> fits" in out
    )
    assert "bf16                18.0 /    17.8 tok/s" in out  # the lab's ceiling table, from the same inputs
    assert "context   100: B=1 58 (58.3)  B=5 288 (57.5)  B=10 566 (56.6)  B=20 1099 (55.0)" in out
    assert (
        main(
            [
                "predict",
                "--model",
                "qwen3-8b",
                "--slots",
                "20",
                "--ctx-per-slot",
                "4096",
                "--machine",
                "rtx-4090",
            ]
        )
        == 0
    )
    assert "-> does NOT fit" not in capsys.readouterr().out  # 15.93 GiB = 17.1 GB < 24 GB
    assert (
        main(
            [
                "predict",
                "--model",
                "qwen3-8b",
                "--slots",
                "40",
                "--ctx-per-slot",
                "4096",
                "--machine",
                "rtx-4090",
            ]
        )
        == 0
    )
    # the lab's warning: 40 slots need 23,040 MiB of cache
    assert "-> does NOT fit" in capsys.readouterr().out


def test_hugging_face_directory_is_read_from_config_and_safetensors_headers(tmp_path):
    import json
    import struct

    (tmp_path / "config.json").write_text(
        json.dumps(
            {"num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "hidden_size": 512}
        )
    )
    tensors = {
        "model.embed_tokens.weight": [0, 1000],
        "model.layers.0.mlp.weight": [1000, 5000],
        "__metadata__": {"format": "pt"},
    }
    header = json.dumps(
        {
            k: (v if k == "__metadata__" else {"dtype": "BF16", "shape": [1], "data_offsets": v})
            for k, v in tensors.items()
        }
    ).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(5000))
    m = load_model(str(tmp_path))
    assert (m.layers, m.kv_heads, m.head_dim) == (4, 2, 64)
    assert m.formats["safetensors"] == {"tensor_bytes": 5000, "embedding_bytes": 1000}
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="no config.json"):
        load_model(str(empty))
