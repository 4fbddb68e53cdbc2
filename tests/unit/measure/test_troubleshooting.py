"""The serving lab's troubleshooting rows and Task 5's shapes as checks, each with the lab's remedy
on the CPU llama-server's real level records and small edits of them."""

from __future__ import annotations

import json

from harness.measure import curves
from harness.measure import level_checks as ts
from harness.report import engine_tables
from harness.report.troubleshooting import load_errors
from tests.conftest import FIXTURES

BOOK = FIXTURES / "notebooks" / "llama-cpu-metrics.md"


def levels() -> dict[int, dict]:
    out = {}
    for line in BOOK.read_text().splitlines():
        rec = json.loads(line)
        if "concurrency" in rec:
            out[rec["concurrency"]] = rec
    return out


def test_every_request_ended_on_length_or_the_stop_row():
    lv = levels()
    assert ts.finish_rules("llama-baseline", lv) == [
        ("PASS", "llama-baseline: every request ended on length (the full 32-token answer)")
    ]
    lv[4] = {**lv[4], "finish_reasons": {"length": 6, "stop": 2}}
    ((verdict, text),) = ts.finish_rules("llama-baseline", lv)
    assert verdict == "WARN" and "(c=4 2 of 8)" in text and text.endswith(ts.STOP_REMEDY)


def test_repeats_that_vary_by_more_than_a_few_per_cent():
    lv = {
        5: {**levels()[4], "runs": 3, "spread": {"output_tokens_per_s": [5.0, 5.2], "ttft_s.p50": [3.0, 3.6]}}
    }
    ((verdict, text),) = ts.repeat_rules("llama-baseline", lv)
    assert verdict == "WARN" and "TTFT p50 at c=5 3 to 3.6 (20%)" in text and text.endswith(ts.VARY_REMEDY)
    lv[5]["spread"] = {"output_tokens_per_s": [5.0, 5.1]}
    assert ts.repeat_rules("llama-baseline", lv)[0][0] == "PASS"
    assert ts.repeat_rules("llama-baseline", levels()) == []  # no --repeat, nothing to judge


def test_shapes_of_task_5():
    lv = levels()
    found = dict((t.split(":")[1].strip()[:9], v) for v, t in ts.shape_rules("llama-baseline", lv))
    # the CPU run: c=8 queued (deferred 4) and its TTFT p90 grew far faster than TPOT p50
    assert found.get("TTFT p90 ") == "WARN"
    flat = {
        1: {**lv[1], "output_tokens_per_s": 10.0},
        4: {**lv[4], "output_tokens_per_s": 38.0, "tpot_s": lv[1]["tpot_s"]},
    }
    ((verdict, text),) = [r for r in ts.shape_rules("x", flat) if "rises" in r[1]]
    assert verdict == "PASS" and "below the knee" in text
    wide = {1: lv[1], 4: {**lv[4], "tpot_s": {**lv[4]["tpot_s"], "p90": lv[4]["tpot_s"]["p50"] * 3}}}
    assert any("interleaved" in t and "--max-num-batched-tokens" in t for _, t in ts.shape_rules("x", wide))


def test_connection_refused_names_the_labs_ports_and_still_loading():
    rules = list(load_errors())
    row = ts.error_remedy("ConnectionError: [Errno 111] Connection refused", rules)
    assert row["id"] == "connection-refused"
    assert "llama-server 8080, vLLM 8000, MLX 8081" in row["remedy"] and "still loading" in row["cause"]
    lv = {
        1: {**levels()[1], "first_error": "ConnectionError: [Errno 111] Connection refused", "completed": 0}
    }
    assert any("8080" in t for v, t in curves.check({"llama-baseline": lv}, rules) if v == "WARN")
    assert (
        ts.error_remedy("HTTP 400: the prompt exceeds the context length", rules)["id"]
        == "prompt-past-context"
    )
    assert ts.error_remedy("something else", rules) is None


def test_cached_none_on_vllm_names_the_flag():
    lv = {1: {**levels()[1], "engine": "vllm", "cached_tokens_mean": None}}
    ((verdict, text),) = ts.cached_rules("vllm-baseline", lv)
    assert verdict == "WARN" and "--enable-prompt-tokens-details" in text
    assert ts.cached_rules("llama-baseline", levels()) == []


def test_decode_rates_that_vary_between_runs():
    def rec(rate, when):
        return {"engine": "mlx-lm", "test": "short", "decode_tokens_per_s": rate, "measured_on": when}

    found = engine_tables.rerun_rules([rec(60.0, "2026-12-01T10:00"), rec(50.0, "2026-12-01T11:00")])
    assert found[0][:2] == ("WARN", "mlx-lm") and "vary by 17% between runs (60.0 then 50.0" in found[0][2]
    assert engine_tables.rerun_rules([rec(60.0, "a"), rec(61.0, "b")])[0][0] == "PASS"


def test_memory_much_larger_than_predicted_on_track_m():
    from harness.sizing.machines import visible_memory_rules
    from harness.engines.models.info import load_model
    from harness.report.engine_verdicts import MUCH_LARGER, memory_rows

    def row(added_mb):
        rec = {
            "engine": "mlx-lm",
            "backend": "Metal",
            "context_length": 8192,
            "quant": "MLX 4-bit",
            "prompt_tokens": 1378,
            "completion_tokens": 128,
            "memory_delta_mb": {"mac_used_mb": added_mb},
        }
        return memory_rows(
            ["mlx-lm"],
            {"mlx-lm": {"short": rec, "long": rec}},
            load_model("qwen3-8b"),
            {"mlx-lm": "MLX 4-bit g64"},
            visible_memory_rules(),
        )[0]

    # 4,607,731,712 + 1,536 x 147,456 = 4,834,224,128 bytes visible: 5,100 MB added is ordinary
    assert row(5100)[1].startswith("vm_stat") and row(5100)[-1] == "nothing"
    assert row(9000)[-1] == MUCH_LARGER
