"""/metrics parsing and level summaries on recorded text: the practice server in its llama-server
and vLLM dialects (idle, while six streams ran, after) and a real CPU llama-server."""

from __future__ import annotations

import pytest

from harness.engines import metrics_sampler
from harness.engines.metrics_sampler import parse_metrics, summarise
from tests.conftest import FIXTURES

METRICS = FIXTURES / "metrics"


def parsed(name: str) -> dict[str, float]:
    return parse_metrics((METRICS / name).read_text(encoding="utf-8"))


def test_llama_dialect_keeps_only_the_watched_families():
    busy = parsed("practice-kit-busy.txt")
    assert set(busy) == {
        "llamacpp:requests_processing",
        "llamacpp:requests_deferred",
        "llamacpp:n_busy_slots_per_decode",
        "llamacpp:prompt_tokens_total",
        "llamacpp:prompt_tokens_cached_total",
        "llamacpp:tokens_predicted_total",
        "llamacpp:n_decode_total",
    }
    assert busy["llamacpp:requests_processing"] == 6  # six streams were running when it was read
    assert busy["llamacpp:prompt_tokens_total"] == 78


def test_vllm_dialect_sums_over_label_sets():
    busy = parsed("practice-vllm-busy.txt")
    assert busy["vllm:num_requests_running"] == 6 and busy["vllm:num_requests_waiting"] == 0
    assert busy["vllm:kv_cache_usage_perc"] == pytest.approx(0.00234375)
    assert busy["vllm:generation_tokens_total"] == 31
    assert not any(name.startswith("llamacpp:") for name in busy)
    twice = (
        (METRICS / "practice-vllm-busy.txt")
        .read_text()
        .replace(
            'vllm:num_requests_running{model_name="local-chat"} 6',
            'vllm:num_requests_running{model_name="local-chat"} '
            '6\nvllm:num_requests_running{model_name="other"} '
            "2",
        )
    )
    assert parse_metrics(twice)["vllm:num_requests_running"] == 8


def test_real_llama_server_metrics():
    real = parsed("llama-server-gemma3-cpu.txt")
    assert real["llamacpp:tokens_predicted_total"] == 8  # one reply of max_tokens 8
    assert real["llamacpp:requests_processing"] == 0


def test_summary_of_a_level_gives_gauge_mean_and_max_and_counter_deltas():
    snaps = [parsed(f"practice-kit-{tag}.txt") for tag in ("idle", "busy", "after")]
    summary = summarise(snaps)
    assert summary["samples"] == 3
    assert summary["llamacpp:requests_processing"] == {"mean": 2.0, "max": 6.0}
    expected = snaps[2]["llamacpp:tokens_predicted_total"] - snaps[0]["llamacpp:tokens_predicted_total"]
    assert summary["llamacpp:tokens_predicted_total"] == {"delta": expected} and expected == 384
    assert "vllm:num_requests_running" not in summary  # not exposed by this dialect


def test_counters_need_two_samples_and_no_samples_is_empty():
    one = summarise([parsed("practice-vllm-busy.txt")])
    assert one["vllm:num_requests_running"] == {"mean": 6.0, "max": 6.0}
    assert "vllm:prompt_tokens_total" not in one
    assert summarise([]) == {}


def test_sampler_counts_errors_when_nothing_answers():
    sampler = metrics_sampler.MetricsSampler("http://127.0.0.1:9/metrics", timeout=0.5)
    sampler.poll_once()
    assert sampler.errors == 1 and sampler.fold.samples == 0 and sampler.summary() == {}
