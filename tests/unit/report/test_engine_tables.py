"""The single-user tables and the lab's check, on hand-made records."""

from harness.cli import main
from harness.report.engine_tables import check, latest_per_engine, memory_added
from harness.endpoints.probes import FEATURES_LAB
from harness.records.notebook import append_record


def speed(engine, test, **kw):
    rec = {
        "lab": FEATURES_LAB,
        "engine": engine,
        "engine_version": "1.0",
        "backend": "CUDA",
        "quant": "Q4_K_M",
        "model": "m",
        "test": test,
        "repetitions": 3,
        "max_tokens": 128,
        "ttft_s": 0.1,
        "decode_tokens_per_s": 50.0,
        "prompt_tokens": 20 if test == "short" else 1500,
        "completion_tokens": 128,
        "token_source": "usage",
        "finish_reason": "length",
        "max_cached_prompt_tokens": 3,
        "prompt_tag": True,
        "prefill_tokens_per_s": 3000.0,
        "memory": {"gpu_total_mb": 24000},
        "memory_delta_mb": {"gpu_process_mb": 5800, "gpu_used_mb": 6100},
        "measured_on": f"2026-11-29T10:0{len(test)}",
    }
    rec.update(kw)
    return rec


def features(engine, tools=True):
    return {
        "lab": FEATURES_LAB,
        "probe": "features",
        "engine": engine,
        "model": "m",
        "models_endpoint": {"supported": True},
        "tool_calling": {
            "supported": tools,
            **({} if tools else {"detail": "the model wrote a <tool_call> block as text"}),
        },
        "structured_output": {"supported": True},
        "measured_on": "2026-11-29T11:00",
    }


def test_memory_source_per_machine_kind():
    assert memory_added(speed("a", "short")) == (5800, "nvidia-smi per-process")
    wsl = speed("a", "short", memory_delta_mb={"gpu_used_mb": 6100})
    assert memory_added(wsl) == (6100, "nvidia-smi device")
    spark = speed("a", "short", memory={}, memory_delta_mb={"mem_available_mb": 7000})
    assert memory_added(spark) == (7000, "MemAvailable")
    amd = speed("a", "short", memory={}, memory_delta_mb={"rocm_vram_used_mb": 500, "rocm_gtt_used_mb": 5000})
    assert memory_added(amd) == (5500, "rocm-smi VRAM+GTT")
    # A Mac: psutil reports an "available" figure there too, but the lab reads vm_stat's pages.
    mac = speed("a", "short", memory={}, memory_delta_mb={"mem_available_mb": 900, "mac_used_mb": 5100})
    assert memory_added(mac) == (5100, "vm_stat active+wired+compressed")


def test_check_rules():
    recs = [
        speed("vllm", "short"),
        speed("vllm", "long"),
        speed("cpu", "short", backend="CPU"),
        speed("cpu", "long", backend="CPU", max_cached_prompt_tokens=900),
    ]
    order, sp, fe = latest_per_engine(recs, [features("vllm"), features("cpu", tools=False)])
    results = check(order, sp, fe)
    assert ("PASS", "vllm", "short and long speed records and a features record present") in results
    fails = [text for level, engine, text in results if level == "FAIL" and engine == "cpu"]
    assert any("does not name an accelerator" in t for t in fails)
    assert any("900 prompt tokens were served from cache" in t for t in fails)
    assert not [r for r in results if r[0] == "FAIL" and r[1] == "vllm"]
    over = check(order, sp, fe, ceilings={"vllm": 40.0})
    assert (
        "FAIL",
        "vllm",
        "decode is 1.25 of the ceiling of its own format, 40.0 tok/s; above 1 means the bandwidth figure is "
        "wrong",
    ) in over
    assert ("WARN", "cpu", "no ceiling: its quant names no format of the model table") in over


def test_engines_command_prints_tables_and_checks(tmp_path, capsys):
    book = tmp_path / "labbook.md"
    for rec in (speed("vllm", "short"), speed("vllm", "long")):
        append_record(book, rec, "engine-speed")
    append_record(book, features("vllm", tools=False), "features")
    assert (
        main(
            [
                "engines",
                "--labbook",
                str(book),
                "--machine",
                "rtx-4090",
                "--model",
                "qwen3-8b",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "| vllm     | Q4_K_M  | CUDA" in out and "nvidia-smi per-process" in out
    assert "<tool_call> block as text" in out and "decode short / own ceiling" in out
    assert "0.23 of 215.8" in out  # 50 tok/s against GGUF Q4_K_M's ceiling on a 1,008 GB/s card
    assert main(["engines", "--labbook", str(book), "--check"]) == 0
