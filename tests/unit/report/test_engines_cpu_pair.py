"""Seed 001's comparison on the CPU: llama.cpp and vLLM on the same model side by side in
the engines tables, with vLLM's memory read over its whole process tree."""

from harness.report import engine_tables


def speed(engine: str, test: str, ttft: float, decode: float, tree: dict) -> dict:
    return {
        "engine": engine,
        "engine_version": "1",
        "backend": "CPU",
        "quant": "Q4_K_M" if engine == "llama.cpp" else "bf16 (from Q4_K_M)",
        "test": test,
        "ttft_s": ttft,
        "decode_tokens_per_s": decode,
        "prefill_tokens_per_s": 900.0,
        "max_tokens": 128,
        "completion_tokens": 128,
        "token_source": "usage",
        "max_cached_prompt_tokens": 0,
        "memory_delta_mb": {"mem_available_mb": 600 if engine == "llama.cpp" else 6000},
        "process_resident_mb": tree.get("rss_mb"),
        "process_tree": tree,
        "measured_on": f"2026-12-01T05:0{0 if engine == 'llama.cpp' else 1}:00Z-{test}",
    }


def features(engine: str, tools: bool) -> dict:
    yes = {"supported": True}
    return {
        "probe": "features",
        "engine": engine,
        "measured_on": "2026-12-01T05:02:00Z",
        "models_endpoint": yes,
        "tool_calling": {"supported": tools, "detail": "status 400" if not tools else ""},
        "streaming_tool_calling": {"supported": tools},
        "structured_output": {"supported": False, "detail": "not JSON"},
    }


def test_both_cpu_engines_side_by_side_with_the_process_tree():
    llama_tree = {"processes": 1, "rss_mb": 560}
    vllm_tree = {"processes": 4, "rss_mb": 6434, "pss_mb": 5814}
    recs = [
        speed("llama.cpp", "short", 0.1, 60.0, llama_tree),
        speed("llama.cpp", "long", 1.5, 50.0, llama_tree),
        speed("vllm", "short", 0.1, 16.0, vllm_tree),
        speed("vllm", "long", 1.0, 12.0, vllm_tree),
    ]
    order, by_speed, by_feat = engine_tables.latest_per_engine(
        recs, [features("llama.cpp", True), features("vllm", False)]
    )
    assert order == ["llama.cpp", "vllm"]
    text = engine_tables.render(order, by_speed, by_feat)
    assert "Resident MB (processes)" in text
    assert "| 560 (1)" in text and "| 6434, PSS 5814 (4)" in text
    sheet = text.split("Recording-sheet rows, speed")[1]
    assert "['llama.cpp, Q4_K_M', 0.1, 1.5, 900.0, 60.0, 50.0, 600]" in sheet
    assert "['vllm, bf16 (from Q4_K_M)', 0.1, 1.0, 900.0, 16.0, 12.0, 6000]" in sheet
    results = engine_tables.check(order, by_speed, by_feat, allow_cpu=True)
    assert not [r for r in results if r[0] == "FAIL"]
    assert engine_tables.check(order, by_speed, by_feat, allow_cpu=False)[0][0] == "FAIL"


def test_task9_memory_on_the_cpu_names_why_no_prediction_is_made():
    from harness.sizing.machines import visible_memory_rules
    from harness.engines.models.info import from_table
    from harness.report import engine_verdicts

    model = from_table("qwen3-8b")
    gguf_only = type(model)(**{**model.__dict__, "formats": {"GGUF Q4_K_M": model.formats["GGUF Q4_K_M"]}})
    tree = {"processes": 1, "rss_mb": 560}
    recs = [speed(e, t, 0.1, 50.0, tree) for e in ("llama.cpp", "vllm") for t in ("short", "long")]
    order, by_speed, _ = engine_tables.latest_per_engine(recs, [])
    fmts = engine_verdicts.formats(order, by_speed, gguf_only)
    assert fmts == {"llama.cpp": "GGUF Q4_K_M"}  # vLLM served bf16, which the GGUF file is not
    rows = {
        r[0]: r[-1]
        for r in engine_verdicts.memory_rows(order, by_speed, gguf_only, fmts, visible_memory_rules())
    }
    assert rows["llama.cpp"] == "it ran on the CPU backend: the rules say what a GPU's memory figure sees"
    assert rows["vllm"] == "its quant names no format of the model"
