"""The engine's own generator as a cross-check: parsers on recorded output of `vllm bench serve` and
`llama-batched-bench`, the seed's command line, the verdicts, and the record."""

from __future__ import annotations

import argparse

import pytest

from harness.measure import crosscheck
from harness.cli import main
from harness.engines.crosscheck_tools import vllm_argv
from harness.errors import TargetError
from harness.measure.levels import LAB_ID
from harness.records.notebook import append_record, read_records
from tests.conftest import FIXTURES

FIX = FIXTURES / "crosscheck"
VLLM_OUT = FIX / "vllm-bench-serve-0.33.0.txt"
BATCHED_OUT = FIX / "llama-batched-bench-b11434.txt"


def level(**changes) -> dict:
    rec = {
        "harness_schema": 1,
        "lab": LAB_ID,
        "label": "vllm-baseline",
        "engine": "vllm",
        "model": "local-chat",
        "base_url": "http://127.0.0.1:8000/v1",
        "prompt_set": "mixed",
        "max_tokens": 128,
        "slo_ttft_s": 2.0,
        "slo_tpot_s": 0.1,
        "concurrency": 20,
        "requests": 80,
        "completed": 80,
        "failed": 0,
        "wall_s": 10.0,
        "output_tokens": 10240,
        "output_tokens_per_s": 1024.0,
        "prompt_tokens_mean": 52.4,
        "server_slots": 20,
        "ttft_s": {"p50": 0.1, "p90": 0.2},
        "tpot_s": {"p50": 0.018, "p90": 0.02},
    }
    rec.update(changes)
    return rec


def test_vllm_bench_output_is_parsed_into_seconds_and_counts():
    got = crosscheck.parse_vllm_bench(VLLM_OUT.read_text())
    assert got["completed"] + got.get("failed", 0) == 80 and got["max_concurrency"] == 20
    assert got["output_tokens"] == got["completed"] * 128  # --ignore-eos: every request the full length
    assert got["output_tokens_per_s"] > 0 and "goodput_requests_per_s" in got
    for metric in ("ttft_s", "tpot_s", "itl_s"):
        assert set(got[metric]) >= {"mean", "p50", "p90"}
        assert 0 < got[metric]["p50"] <= got[metric]["p90"]
    assert got["tpot_s"]["p50"] < 1.0  # milliseconds became seconds


def test_vllm_bench_without_a_result_block_is_one_line():
    with pytest.raises(TargetError, match="printed no result block; its last line: ModuleNotFoundError"):
        crosscheck.parse_vllm_bench(
            "Traceback (most recent call last):\nModuleNotFoundError: No module named 'x'\n"
        )


def test_the_seeds_vllm_bench_command_at_the_c20_row():
    args = argparse.Namespace(
        exec_prefix="docker exec vllm-lab",
        vllm="vllm",
        checkpoint="/models/Qwen/Qwen3-8B-AWQ",
        num_prompts=80,
        concurrency=20,
        goodput=None,
    )
    argv = vllm_argv(args, level(), 40, 128)
    assert " ".join(argv) == (
        "docker exec vllm-lab vllm bench serve --backend openai-chat --base-url http://127.0.0.1:8000 "
        "--endpoint /v1/chat/completions --model /models/Qwen/Qwen3-8B-AWQ --served-model-name local-chat "
        "--dataset-name random --random-input-len 40 --random-output-len 128 --ignore-eos "
        "--num-prompts 80 --max-concurrency 20 "
        "--percentile-metrics ttft,tpot,itl --metric-percentiles 50,90 --goodput ttft:2000 tpot:100"
    )


def test_batched_bench_table_is_parsed_and_read_as_a_service():
    rows = crosscheck.parse_batched_bench(BATCHED_OUT.read_text())
    assert [(r["pp"], r["tg"], r["b"]) for r in rows] == [(52, 16, 1), (52, 16, 4)]
    four = rows[1]
    assert four["n_kv"] == 4 * (52 + 16)
    svc = crosscheck.batched_as_service(four)
    assert svc["output_tokens_per_s"] == pytest.approx(4 * 16 / four["t_s"], rel=1e-3)
    assert svc["tpot_s"]["p50"] == pytest.approx(four["t_tg_s"] / 16, rel=1e-3)
    with pytest.raises(TargetError, match="no result table"):
        crosscheck.parse_batched_bench("error: failed to load model\n")


@pytest.mark.parametrize(
    "ours, theirs, bound, verdict",
    [
        ((1000, 0.018), (1020, 0.0182), False, "agree"),
        ((800, 0.018), (1000, 0.018), False, "client suspect"),
        ((1000, 0.030), (1000, 0.018), False, "differ"),
        ((60, 0.07), (65, 0.06), True, "within bound"),
        ((90, 0.05), (65, 0.06), True, "above bound"),
    ],
)
def test_verdicts(ours, theirs, bound, verdict):
    got = crosscheck.compare(
        level(output_tokens_per_s=ours[0], tpot_s={"p50": ours[1], "p90": ours[1]}),
        {"output_tokens_per_s": theirs[0], "tpot_s": {"p50": theirs[1]}},
        0.05,
        bound=bound,
    )
    assert got["verdict"] == verdict
    assert got["output_tokens_per_s_ratio"] == round(ours[0] / theirs[0], 4)


def test_command_compares_a_saved_output_with_the_row_and_records_it(tmp_path, capsys):
    nb = tmp_path / "labbook.md"
    theirs = crosscheck.parse_vllm_bench(VLLM_OUT.read_text())
    row = level(
        output_tokens_per_s=theirs["output_tokens_per_s"] * 0.99,
        tpot_s={"p50": theirs["tpot_s"]["p50"] * 1.01, "p90": theirs["tpot_s"]["p90"]},
    )
    append_record(nb, row, "level")
    assert (
        main(
            [
                "crosscheck",
                "--labbook",
                str(nb),
                "--label",
                "vllm-baseline",
                "--tool",
                "vllm-bench",
                "--output",
                str(VLLM_OUT),
                "--prompt-tokens",
                "40",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "verdict: agree (tolerance 5%)" in out
    rec = read_records(nb, "cross-check", lambda o: o.get("record") == "cross-check").records[0]
    assert rec["from_file"] and rec["verdict"] == "agree" and rec["theirs"]["max_concurrency"] == 20
    assert rec["output_tokens_per_s_ratio"] == pytest.approx(0.99, abs=0.001)
    assert "--random-input-len 40" in rec["command"]
    # a row that does not exist is a one-line error naming what does
    assert (
        main(
            [
                "crosscheck",
                "--labbook",
                str(nb),
                "--label",
                "vllm-baseline",
                "--concurrency",
                "5",
                "--tool",
                "vllm-bench",
                "--output",
                str(VLLM_OUT),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "no c=5 row for label 'vllm-baseline'" in err and "(it has c=20)" in err


def test_the_tools_cpu_share_is_taken_over_its_benchmark_not_its_start_up():
    # 10 s of start-up at a full core (imports), then 20 s of benchmark at 40 % of a core
    samples = [(t / 4, min(t / 4, 10) + max(t / 4 - 10, 0) * 0.4) for t in range(121)]
    assert crosscheck.cpu_share(samples, 20.0) == pytest.approx(0.4)
    assert crosscheck.cpu_share(samples, 40.0) is None  # the samples do not reach back that far
    assert crosscheck.cpu_share([], 20.0) is None and crosscheck.cpu_share(samples, None) is None


def test_a_tool_whose_client_took_the_servers_cpu_is_named_with_its_numbers():
    ours = level(output_tokens_per_s=66.9, tpot_s={"p50": 0.059}, client_cpu=0.02, prompt_tokens_mean=39)
    theirs = {"output_tokens_per_s": 59.8, "tpot_s": {"p50": 0.066}, "client_cpu": 0.45}
    theirs.update(input_tokens=40 * 39, completed=40)
    got = crosscheck.compare(ours, theirs, 0.05, cores=2)
    assert got["verdict"] == "differ"
    assert any(
        "used 45% of a core while it measured, ours 2%: 22% more of this 2-core" in n for n in got["notes"]
    )
    assert not any("prompts averaged" in n for n in got["notes"])  # the same prompt length
    # a server elsewhere (cores unknown), or a tool as light as ours: no such claim
    assert not any("of a core" in n for n in crosscheck.compare(ours, theirs, 0.05)["notes"])
    light = {**theirs, "client_cpu": 0.05}
    assert not any("of a core" in n for n in crosscheck.compare(ours, light, 0.05, cores=2)["notes"])
    longer = {**theirs, "input_tokens": 40 * 60}
    assert any(
        "prompts averaged 60 tokens against our row's 39" in n
        for n in crosscheck.compare(ours, longer, 0.05)["notes"]
    )


def test_a_tool_run_with_failed_requests_says_so():
    theirs = {"output_tokens_per_s": 22.3, "tpot_s": {"p50": 0.06}, "completed": 24, "failed": 16}
    got = crosscheck.compare(level(), theirs, 0.05)
    assert (
        "16 of the tool's 40 requests failed, so it did not measure the same load: read its output"
        in got["notes"]
    )
