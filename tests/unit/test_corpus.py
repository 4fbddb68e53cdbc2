"""Every reader on every sample of the corpus of real outputs (tests/corpus, see its README): what
it reads must be the facts written beside the sample, read there by eye; what it cannot read must
be one line naming the engine or tool, never a silent null or a wrong number."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from harness.core import engine_logs, llama_log, trtllm_log, vllm_log
from harness.core.stream import StreamParser
from harness.io.metrics_sampler import COUNTERS, GAUGES, parse_metrics
from tests.corpus_samples import samples

MIN_SAMPLES = 80


def ids(group: list) -> list[str]:
    return [s.id for s in group]


def test_the_corpus_is_large_enough_and_every_sample_names_its_public_source():
    found = samples()
    assert len(found) >= MIN_SAMPLES, Counter(s.reader for s in found)
    for s in found:
        assert str(s.header.get("source", "")).startswith("https://"), s.id
        assert s.header.get("what"), s.id
        assert s.body.strip(), s.id


def close(got, want, what: str, sample) -> None:
    if isinstance(want, float) or isinstance(got, float):
        assert got is not None and math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-9), (
            sample.id,
            what,
            got,
            want,
        )
    else:
        assert got == want, (sample.id, what, got, want)


# -- llama.cpp load logs ------------------------------------------------------------------------------


@pytest.mark.parametrize("sample", samples("llama-log"), ids=ids(samples("llama-log")))
def test_llama_log(sample):
    facts, want = llama_log.parse(sample.body), sample.expect
    assert engine_logs.detect_engine(sample.body) == "llama-server", sample.id
    if "kv_caches" in want:
        assert len(facts["kv_caches"]) == len(want["kv_caches"]), (sample.id, facts["kv_caches"])
        for got, expected in zip(facts["kv_caches"], want["kv_caches"], strict=True):
            for key, value in expected.items():
                close(got.get(key), value, f"kv_caches.{key}", sample)
    pool = llama_log.pool_tokens(facts)
    if "pool_tokens" in want:
        close(pool, want["pool_tokens"], "pool_tokens", sample)
    elif pool is None:
        assert "has no KV cache size line" in llama_log.unread(facts)
    for key, mine in (
        ("n_slots", "n_slots"),
        ("n_ctx_slot", "n_ctx_slot"),
        ("offloaded", "offloaded_layers"),
        ("devices", "devices"),
        ("model_buffers_mib", "model_buffers_mib"),
    ):
        if key in want:
            close(facts.get(mine), want[key], key, sample)
    if "build" in want:
        number = str(want["build"]).removeprefix("b").split()[0]
        assert number in facts.get("build", ""), (sample.id, facts.get("build"))


# -- vLLM and TensorRT-LLM start-up logs -------------------------------------------------------------

VLLM_KEYS = {
    "kv_tokens": "kv_tokens",
    "max_concurrency": "max_concurrency",
    "concurrency_len": "max_model_len",
    "gpu_blocks": "gpu_blocks",
    "cpu_blocks": "cpu_blocks",
    "block_size": "block_size",
    "weights_gib": "model_loading_gib",
    "version": "version",
}


FAILURE_KINDS = ("free_memory_below_utilization", "no_cache_memory", "oom")


@pytest.mark.parametrize("sample", samples("vllm-log"), ids=ids(samples("vllm-log")))
def test_vllm_log(sample):
    facts, want = vllm_log.parse(sample.body), sample.expect
    assert engine_logs.detect_engine(sample.body) == "vllm", sample.id
    for key, mine in VLLM_KEYS.items():
        if key in want:
            close(facts.get(mine), want[key], key, sample)
    if "kv_gib" in want:
        close(facts.get("available_kv_gib", facts.get("reserved_kv_gib")), want["kv_gib"], "kv_gib", sample)
    if "device" in want and vllm_log.states_allocation(sample.body) and not facts.get("failure"):
        close(facts.get("kv_device"), want["device"], "device", sample)
    failure = want.get("failure")
    if failure and failure.get("kind") == "max_seq_len_exceeds_kv":
        assert facts["failure"] == {k: failure[k] for k in ("kind", "max_seq_len", "kv_tokens")}, sample.id
    elif failure and failure.get("kind") in FAILURE_KINDS:
        assert facts["failure"]["kind"] == failure["kind"], (sample.id, facts.get("failure"))
    if vllm_log.pool_tokens(facts) is None:
        assert "vLLM" in vllm_log.unread(facts)


@pytest.mark.parametrize("sample", samples("trtllm-log"), ids=ids(samples("trtllm-log")))
def test_trtllm_log(sample):
    facts, want = trtllm_log.parse(sample.body), sample.expect
    assert engine_logs.detect_engine(sample.body) == "trtllm", sample.id
    for key in (
        "kv_max_tokens",
        "kv_gib",
        "kv_blocks",
        "tokens_per_block",
        "max_batch_size",
        "max_num_tokens",
        "max_seq_len",
        "version",
    ):
        if key in want:
            close(facts.get(key), want[key], key, sample)


# -- /metrics -----------------------------------------------------------------------------------------

WATCHED = set(GAUGES) | set(COUNTERS)


@pytest.mark.parametrize("sample", samples("metrics"), ids=ids(samples("metrics")))
def test_metrics(sample):
    got = parse_metrics(sample.body)
    for name, value in sample.expect.items():
        if name in WATCHED and value is not None:
            close(got.get(name), float(value), name, sample)
    assert set(got) <= WATCHED


# -- streams ------------------------------------------------------------------------------------------


def replay(body: str):
    parser = StreamParser(0.0)
    for i, line in enumerate(body.split("\n")):
        parser.feed(line.encode() + b"\n", 0.01 * (i + 1))
    return parser.finish(1.0)


@pytest.mark.parametrize("sample", samples("stream"), ids=ids(samples("stream")))
def test_stream(sample):
    s, want = replay(sample.body), sample.expect
    for key in ("output_tokens", "prompt_tokens", "cached_tokens", "token_source", "finish_reason"):
        if key in want:
            close(getattr(s, key), want[key], key, sample)
    if "tool_name" in want:
        assert [c["name"] for c in s.tool_calls][:1] == [want["tool_name"]], (sample.id, s.tool_calls)
    if "fields" in want:
        assert set(s.fields) == set(want["fields"]), (sample.id, s.fields)
    if want.get("done"):
        assert s.saw_done, sample.id
    if "error" in want:
        assert s.error, sample.id
