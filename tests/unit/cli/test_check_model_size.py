"""``harness check`` sets each single-user record against the speed limit of the model that served it
(read from the run's manifest and the model file the engine loaded), not Day 3's 4.9 GB model."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from harness.report.speed_check import Served, model_gb
from harness.endpoints.probes import FEATURES_LAB
from harness.records.notebook import append_record


def hf_dir(path: Path, tensor_bytes: int) -> Path:
    """A Hugging Face directory whose one safetensors header says ``tensor_bytes`` (no data needed:
    only the header is read)."""
    path.mkdir(parents=True)
    cfg = {
        "num_hidden_layers": 18,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 256,
        "hidden_size": 640,
    }
    (path / "config.json").write_text(json.dumps(cfg))
    header = json.dumps(
        {"w": {"dtype": "BF16", "shape": [tensor_bytes // 2], "data_offsets": [0, tensor_bytes]}}
    )
    (path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header.encode())
    return path


def speed(engine: str, rate: float) -> dict:
    return {
        "lab": FEATURES_LAB,
        "engine": engine,
        "model": "gemma-3-270m",
        "test": "short",
        "repetitions": 2,
        "ttft_s": 0.1,
        "decode_tokens_per_s": rate,
        "token_source": "usage",
    }


def test_each_record_against_its_own_model(tmp_path, capsys):
    from harness.cli import main

    run = tmp_path / "run"
    small, large = hf_dir(tmp_path / "q4", 250_000_000), hf_dir(tmp_path / "bf16", 500_000_000)
    run.mkdir()
    manifest = {
        "engines": {
            "llama": {
                "engine": "llama-server-cpu",
                "settings": {"model": str(small), "alias": "gemma-3-270m"},
            },
            "vllm": {"engine": "vllm-cpu", "settings": {"model": str(large), "served_name": "gemma-3-270m"}},
        }
    }
    (run / "manifest.json").write_text(json.dumps(manifest))
    book = run / "labbook.md"
    append_record(book, speed("llama.cpp", 1500.0), "engine-speed")
    append_record(book, speed("vllm", 700.0), "engine-speed")
    main(["check", "--machine", "m4-max", "--labbook", str(book), "--base-url", "http://127.0.0.1:9/v1"])
    out = capsys.readouterr().out
    # 546 GB/s / 0.25 GB = 2,184 tok/s; 546 / 0.5 = 1,092 tok/s
    assert "llama.cpp (single-user short test): 1500.0 tok/s = 69% of 2184 tok/s for its 0.25 GB model" in out
    assert "vllm (single-user short test): 700.0 tok/s = 64% of 1092 tok/s for its 0.5 GB model" in out


def test_size_from_the_record_the_engine_then_nothing():
    served = [
        Served("gemma-3-270m", "llama.cpp", {"GGUF Q4_K_M": {"tensor_bytes": 246_587_904}}),
        Served("gemma-3-270m", "vllm", {"safetensors": {"tensor_bytes": 536_196_352}}),
    ]
    rec = {"model": "gemma-3-270m", "engine": "vllm", "quant": "bf16 (from Q4_K_M)"}
    assert model_gb(rec, served) == 0.536196352
    assert model_gb({**rec, "engine": "llama.cpp", "quant": "Q4_K_M"}, served) == 0.246587904
    assert model_gb({**rec, "speed_limit": {"model_gb": 4.6}}, served) == 4.6
    assert model_gb({**rec, "model": "local-chat"}, served) is None


def test_the_cpu_tracks_gemma_records_against_gemmas_size(tmp_path, capsys):
    """The acceptance case: the CPU llama-server's real crowd-of-1 level (Gemma 3 270M Q4_K_M) and the
    run's manifest naming the model file it loaded: the limit is bandwidth / 0.247 GB, not 4.9 GB."""
    import shutil

    import pytest

    from harness.cli import main
    from harness.errors import InstallError
    from harness.engines import llama_cpu
    from tests.conftest import FIXTURES

    try:
        gguf = llama_cpu.find_model()
    except InstallError as exc:
        pytest.skip(f"the CPU model is not installed (make llama-cpu): {exc}")
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(FIXTURES / "notebooks" / "llama-cpu-metrics.md", run / "labbook.md")
    engines = {
        "llama": {"engine": "llama-server-cpu", "settings": {"model": str(gguf), "alias": "gemma-3-270m"}}
    }
    (run / "manifest.json").write_text(json.dumps({"engines": engines}))
    main(
        [
            "check",
            "--machine",
            "spark",
            "--labbook",
            str(run / "labbook.md"),
            "--base-url",
            "http://127.0.0.1:9/v1",
        ]
    )
    out = capsys.readouterr().out
    # 273 GB/s / 0.246587904 GB = 1,107 tok/s
    assert (
        "llama-baseline (crowd of 1, 1 / TPOT p50): " in out and "of 1107 tok/s for its 0.247 GB model" in out
    )
    assert "4.9 GB model (its own" not in out
