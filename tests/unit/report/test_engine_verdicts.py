"""Task 9 in `harness engines` and the report, on a notebook of two engines of different formats
(llama.cpp GGUF Q4_K_M and TensorRT-LLM bf16, record shapes as `harness measure`/`probe` wrote them)."""

import json
from pathlib import Path
from types import SimpleNamespace

from harness.cli import main
from harness.records.notebook import append_record
from harness.report import measured

BOOK = Path(__file__).resolve().parents[2] / "fixtures" / "notebooks" / "engines-spark.md"


def test_engines_prints_ratios_and_ceilings_per_format(capsys):
    assert main(["engines", "--labbook", str(BOOK), "--machine", "spark"]) == 0
    out = capsys.readouterr().out
    # each engine against its own format's ceiling: 58.4 (Q4_K_M) and 18.0 (bf16) at 273 GB/s
    assert "| llama.cpp    | GGUF Q4_K_M | 4.67            | 58.4" in out
    assert "| tensorrt-llm | bf16        | 15.14           | 18.0" in out
    assert "0.69 of 58.4" in out and "0.79 of 18.0" in out
    # measured 14.2 / 40.1 = 0.35 beside the predicted 4.67 / 15.14 = 0.31
    assert "| 0.35       | 4.67 / 15.14 = 0.31" in out
    assert "higher: llama.cpp is further below its ceiling than tensorrt-llm" in out
    # visible bytes and overhead: the lab's Track S rows
    assert "5,879,726,080 (8,192 cache tokens)" in out and "| 530 " in out
    assert "17,589,430,272 (8,192 cache tokens)" in out and "| 641 " in out
    assert "tensorrt-llm is fastest at 5,120.8 tok/s, 2.17 x llama.cpp" in out
    assert "Winner for a task needing tool calls and JSON-schema output: llama.cpp" in out
    assert (
        "Not eligible however fast (a tool-calling or JSON-schema probe failed or is missing): tensorrt-llm"
        in out
    )
    assert "do not serve the same bits (GGUF Q4_K_M, bf16)" in out
    assert (
        "- tensorrt-llm, tool calling: the model wrote a <tool_call> block as text; what would change it: "
        "--tool_parser qwen3"
    ) in out


def test_without_a_machine_no_ceiling_is_invented(capsys):
    assert main(["engines", "--labbook", str(BOOK)]) == 0
    out = capsys.readouterr().out
    assert "No ceilings: no machine (bandwidth) was given" in out
    assert "own ceiling" not in out
    assert "4.67 / 15.14 = 0.31" in out  # the ratio needs no bandwidth


def test_check_uses_each_engines_own_ceiling(capsys):
    main(["engines", "--labbook", str(BOOK), "--machine", "spark", "--check"])
    out = capsys.readouterr().out
    assert "decode is 0.69 of the ceiling of its own format, 58.4 tok/s" in out
    assert "decode is 0.79 of the ceiling of its own format, 18.0 tok/s" in out


def test_faster_native_engine_wins_and_limits_are_named(tmp_path, capsys):
    lines = [line for line in BOOK.read_text().splitlines() if line.startswith("{")]
    book = tmp_path / "labbook.md"

    for line in lines:
        rec = json.loads(line)
        if rec.get("engine") == "tensorrt-llm":
            if rec.get("probe") == "features":
                rec["tool_calling"] = {"status": 200, "supported": True}
            else:
                rec["decode_tokens_per_s"] = 60.0  # above bf16's 18.0 ceiling on a Spark
        append_record(book, rec, "features" if rec.get("probe") else "engine-speed")
    text = "\n".join(measured.section(book, SimpleNamespace(machine="spark", steps=[])))
    assert text.startswith("## Measured against what bandwidth allows")
    assert "### Task 9: Explain the differences (engine comparison)" in text
    assert "Winner for a task needing tool calls and JSON-schema output: tensorrt-llm (60.00 tok/s)" in text
    assert "tensorrt-llm decodes above its own ceiling: the bandwidth figure is wrong" in text
    assert "| 1.50       | 4.67 / 15.14 = 0.31" in text


def test_report_section_absent_without_records(tmp_path):
    assert measured.section(tmp_path / "none.md", SimpleNamespace(machine=None, steps=[])) == []


def test_a_notebook_of_another_model_is_warned(tmp_path, capsys):
    book = tmp_path / "labbook.md"
    for line in BOOK.read_text().splitlines():
        if line.startswith("{"):
            rec = {**json.loads(line), "model": "gemma-3-270m"}
            append_record(book, rec, "features" if rec.get("probe") else "engine-speed")
    assert main(["engines", "--labbook", str(book)]) == 0
    assert "Warning: no record names Qwen3-8B (they name gemma-3-270m)" in capsys.readouterr().out


def test_vllm_memory_row_names_its_pool_not_the_context():
    """vLLM was told a 1,342,177,280-byte pool (about 9,102 tokens at 147,456 bytes each), not 8,192
    tokens of context: the row says what it computed from (001 Task 9: 6,098,479,104 + 1,342,177,280)."""
    from harness.sizing.machines import visible_memory_rules
    from harness.engines.models.info import load_model
    from harness.report.engine_verdicts import memory_rows

    rec = {
        "engine": "vllm",
        "backend": "CUDA",
        "context_length": 8192,
        "quant": "AWQ",
        "memory_delta_mb": {"gpu_process_mb": 7900},
    }
    rows = memory_rows(
        ["vllm"],
        {"vllm": {"short": rec, "long": rec}},
        load_model("qwen3-8b"),
        {"vllm": "AWQ 4-bit g128"},
        visible_memory_rules(),
    )
    assert "7,440,656,384 (1,342,177,280-byte pool, about 9,102 cache tokens)" in rows[0][2]


def test_identity_row_marks_what_differs_from_the_baseline(capsys):
    """Engines lab: an identity row per engine (checkpoint, representation, prompt, context, answer
    limit, cache state), each difference from the portable llama.cpp baseline marked."""
    from harness.report.identity import identity_rows

    assert main(["engines", "--labbook", str(BOOK), "--machine", "spark"]) == 0
    out = capsys.readouterr().out
    assert "Identity of each run (* differs from the portable baseline, llama.cpp" in out
    assert "| tensorrt-llm | Qwen3-8B     | bf16 *" in out
    base = {
        "model": "Qwen3-8B",
        "quant": "Q4_K_M",
        "prompt_tokens": 1504,
        "prompt_tag": True,
        "context_length": 8192,
        "max_tokens": 128,
        "max_cached_prompt_tokens": 6,
    }
    other = {
        **base,
        "quant": "AWQ",
        "prompt_tokens": 1490,
        "context_length": 4096,
        "max_cached_prompt_tokens": 1400,
    }
    rows = identity_rows(["llama.cpp", "vllm"], {"llama.cpp": {"long": base}, "vllm": {"long": other}})
    assert rows[1] == [
        "vllm",
        "Qwen3-8B",
        "AWQ *",
        "Qwen3-8B's own",
        "1,490 tokens, tagged",
        "4,096 *",
        "128",
        "at most 1,400 prompt tokens cached *",
    ]
