"""The practice server, tested as a real server in its own process (issue: foundation)."""

from __future__ import annotations

import itertools
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import pytest
import requests

from harness.endpoints.http_client import stream_chat
from tests.conftest import kit_profile

pytestmark = pytest.mark.slow

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age", "tags"],
    "additionalProperties": False,
}
PREAMBLE = " ".join(
    f"Rule {i}: answer politely and cite the section of the handbook you used." for i in range(60)
)


def ask(text: str, **extra) -> dict:
    return {"model": "local-chat", "messages": [{"role": "user", "content": text}], **extra}


def run_concurrent(base_url, bodies, **kw):
    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(lambda b: stream_chat(base_url, b, **kw), bodies))


# -- seats, queueing, batching -------------------------------------------------------------------


def test_sixteen_requests_on_eight_seats_half_wait(practice):
    server = practice(
        kit_profile(
            name="seats",
            output={"length": {"kind": "fixed", "tokens": 80}},
            timing={"step_base_s": 0.02, "step_per_seq_s": 0.001},
        )
    )
    bodies = [ask(f"request {i}", max_tokens=100) for i in range(16)]
    ids = [f"seat-test-{i}" for i in range(16)]

    def one(i):
        return stream_chat(server.base_url, bodies[i], headers={"X-Request-Id": ids[i]})

    with ThreadPoolExecutor(17) as pool:
        futures = [pool.submit(one, i) for i in range(16)]
        # All 16 in the server at once, by its own gauges: waited for (the first wave lasts 80 x 28
        # ms = 2.2 s), not a sleep that a loaded machine's slow threads can fall either side of.
        during = ""
        while not all(f.done() for f in futures):
            during = server.metrics()
            if "llamacpp:requests_deferred 8\n" in during and "llamacpp:requests_processing 8\n" in during:
                break
            time.sleep(0.05)
        samples = [f.result() for f in futures]
    assert all(s.ok for s in samples), [s.error for s in samples if not s.ok]
    assert "llamacpp:requests_deferred 8\n" in during, during
    assert "llamacpp:requests_processing 8\n" in during, during
    truths = sorted((server.truth(i) for i in ids), key=lambda t: t["admitted"])
    # The seats by the server's own clock, whatever the load: the first 8 admitted before any
    # answer ended, each of the other 8 only once one had (a seat frees when the last step of its
    # answer ends, as the server planned it; 1 ms for the clock read at that step's end).
    first_end = min(t["scheduled"][-1] for t in truths)
    assert all(t["admitted"] < first_end for t in truths[:8]), truths[:8]
    assert all(t["admitted"] >= first_end - 1e-3 for t in truths[8:]), (first_end, truths[8:])
    by_id = dict(zip(ids, samples, strict=True))
    for t in truths[8:]:
        assert by_id[t["id"]].ttft >= t["queued_s"] > 0  # the wait is inside TTFT
        assert t["seat"] is not None


def test_tpot_rises_with_running_sequences_as_the_profile_says(practice):
    a, b = 0.010, 0.004
    server = practice(
        kit_profile(
            name="tpot",
            output={"length": {"kind": "fixed", "tokens": 30}},
            timing={"step_base_s": a, "step_per_seq_s": b},
        )
    )
    alone = stream_chat(server.base_url, ask("alone", max_tokens=50))
    crowd = run_concurrent(server.base_url, [ask(f"crowd {i}", max_tokens=50) for i in range(8)])
    assert alone.ok and all(s.ok for s in crowd)
    assert alone.tpot == pytest.approx(a + b, rel=0.25)
    assert statistics.median(s.tpot for s in crowd) == pytest.approx(a + 8 * b, rel=0.25)
    assert alone.output_tokens == 30 and alone.token_source == "usage"


# -- prefix caching, both styles -----------------------------------------------------------------


@pytest.mark.parametrize("profile", ["kit", "vllm"])
def test_prefix_reuse_shared_preamble_versus_unique_first_line(practice, profile):
    server = practice(profile)
    shared = [
        stream_chat(server.base_url, ask(PREAMBLE + f"\nQuestion {i}: what is rule {i}?", max_tokens=8))
        for i in range(4)
    ]
    assert all(s.ok for s in shared)
    for s in shared[1:]:
        assert s.cached_tokens >= 0.8 * s.prompt_tokens, (s.cached_tokens, s.prompt_tokens)
    unique = [
        stream_chat(server.base_url, ask(f"tag-{i * 7919}-{profile}\n" + PREAMBLE, max_tokens=8))
        for i in range(4)
    ]
    assert all(s.ok and s.cached_tokens < 10 for s in unique), [s.cached_tokens for s in unique]


def test_cached_tokens_lower_ttft_by_the_prefill_saved(practice):
    server = practice(
        kit_profile(name="prefill", timing={"prefill_tokens_per_s": 1000, "prefill_chunk": 4096})
    )
    cold = stream_chat(server.base_url, ask(PREAMBLE + "\nfirst", max_tokens=4))
    warm = stream_chat(server.base_url, ask(PREAMBLE + "\nsecond", max_tokens=4))
    saved = (warm.cached_tokens or 0) / 1000
    assert cold.ttft - warm.ttft == pytest.approx(saved, abs=0.05)
    assert warm.timings["cache_n"] == warm.cached_tokens


# -- output: thinking fields, tools, JSON schema ------------------------------------------------


def test_thinking_comes_first_in_each_modes_field(practice):
    llama = stream_chat(practice("llama").base_url, ask("think", max_tokens=40))
    vllm = stream_chat(practice("vllm").base_url, ask("think", max_tokens=40))
    assert llama.fields == ["reasoning_content", "content"]
    assert vllm.fields == ["reasoning", "content"]


def test_thinking_budget_spent_before_answer_stops_on_length(practice):
    s = stream_chat(practice("llama").base_url, ask("think", max_tokens=8))
    assert s.fields == ["reasoning_content"] and s.finish_reason == "length" and s.output_tokens == 8


def test_ignore_eos_runs_every_reply_to_max_tokens(practice):
    base = practice(
        kit_profile(output={"length": {"kind": "lognormal", "median": 12, "sigma": 0.3}})
    ).base_url
    plain = [stream_chat(base, ask(f"short {i}", max_tokens=40)) for i in range(3)]
    assert all(s.finish_reason == "stop" and s.output_tokens < 40 for s in plain)  # the profile's own lengths
    forced = [stream_chat(base, ask(f"short {i}", max_tokens=40, ignore_eos=True)) for i in range(3)]
    assert [(s.finish_reason, s.output_tokens) for s in forced] == [("length", 40)] * 3


def tool_call_reply(base_url):
    body = ask("What is the weather in Paris right now?", tools=[WEATHER_TOOL])
    return requests.post(base_url + "/chat/completions", json=body, timeout=10).json()


def test_tool_call_names_the_function_with_valid_arguments(practice):
    server = practice("kit")
    reply = tool_call_reply(server.base_url)
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]
    assert call["function"]["name"] == "get_weather"
    args = json.loads(call["function"]["arguments"])
    jsonschema.validate(args, WEATHER_TOOL["function"]["parameters"])
    assert isinstance(args["city"], str)
    streamed = stream_chat(server.base_url, ask("weather in Oslo?", tools=[WEATHER_TOOL]))
    assert streamed.ok and streamed.fields == ["tool_calls"] and streamed.finish_reason == "tool_calls"


def test_engine_without_tool_parser_writes_the_call_as_text(practice):
    server = practice(kit_profile(name="noparser", features={"tool_parser": False}))
    message = tool_call_reply(server.base_url)["choices"][0]["message"]
    assert "tool_calls" not in message
    assert message["content"].startswith("<tool_call>") and "get_weather" in message["content"]


def json_schema_reply(base_url):
    body = ask(
        "Describe the user.",
        response_format={"type": "json_schema", "json_schema": {"name": "user", "schema": ANSWER_SCHEMA}},
    )
    return requests.post(base_url + "/chat/completions", json=body, timeout=10).json()


def test_json_schema_reply_matches_the_schema(practice):
    content = json_schema_reply(practice("vllm").base_url)["choices"][0]["message"]["content"]
    jsonschema.validate(json.loads(content), ANSWER_SCHEMA)


def test_engine_ignoring_the_schema_replies_in_prose(practice):
    server = practice(kit_profile(name="noschema", features={"json_schema": False}))
    content = json_schema_reply(server.base_url)["choices"][0]["message"]["content"]
    with pytest.raises(json.JSONDecodeError):
        json.loads(content)


# -- metrics, slots, load log --------------------------------------------------------------------


def test_llama_mode_metrics_slots_and_load_log(practice):
    server = practice("kit")
    assert stream_chat(server.base_url, ask("count me", max_tokens=5)).ok
    text = server.metrics()
    for name in (
        "prompt_tokens_total",
        "prompt_tokens_cached_total",
        "tokens_predicted_total",
        "requests_processing",
        "requests_deferred",
        "n_busy_slots_per_decode",
        "n_decode_total",
    ):
        assert f"llamacpp:{name} " in text
    assert "llamacpp:tokens_predicted_total 5" in text
    slots = requests.get(server.root + "/slots", timeout=5).json()
    assert len(slots) == 8 and {"id", "is_processing", "n_ctx"} <= set(slots[0])
    log = server.log.read_text()
    assert "llama_kv_cache: size = 4096.00 MiB (  4096 cells,  32 layers,  8/8 seqs)" in log
    assert "n_slots = 8, n_ctx_slot = 4096" in log
    assert "slots=8" in server.out.read_text()


def test_vllm_mode_metrics_and_load_log(practice):
    server = practice("vllm")
    assert stream_chat(server.base_url, ask("count me", max_tokens=5)).ok
    text = server.metrics()
    for name in (
        "num_requests_running",
        "num_requests_waiting",
        "kv_cache_usage_perc",
        "num_preemptions_total",
        "prefix_cache_queries_total",
        "prefix_cache_hits_total",
    ):
        assert f'vllm:{name}{{model_name="local-chat"}} ' in text
    log = server.log.read_text()
    assert "GPU KV cache size: 81,920 tokens" in log
    assert "Maximum concurrency for 4,096 tokens per request: 20.00x" in log


def test_vllm_pool_preempts_when_blocks_run_out(practice):
    profile = {
        "schema_version": 1,
        "name": "tight",
        "mode": "vllm",
        "model": {"id": "local-chat", "size_gb": 1},
        "seats": 4,
        "ctx_per_seat": 512,
        "pool_tokens": 256,
        "prefix_cache": "pooled",
        "timing": {"kind": "batched", "step_base_s": 0.002, "step_per_seq_s": 0.0005},
        "output": {"length": {"kind": "fixed", "tokens": 60}},
    }
    server = practice(profile)
    samples = run_concurrent(server.base_url, [ask(f"p{i} " + "word " * 30, max_tokens=60) for i in range(4)])
    assert all(s.ok and s.output_tokens == 60 for s in samples)
    assert 'vllm:num_preemptions_total{model_name="local-chat"} 0' not in server.metrics()


# -- faults --------------------------------------------------------------------------------------


def fault(server, spec, timeout=10.0, **extra):
    return stream_chat(
        server.base_url,
        ask("fault", max_tokens=20, **extra),
        timeout=timeout,
        headers={"X-Practice-Fault": spec},
    )


def test_injected_500(practice):
    s = fault(practice("kit"), "error-500")
    assert not s.ok and s.error.startswith("HTTP 500")


def test_cut_stream_is_a_failure(practice):
    s = fault(practice("kit"), "cut:3")
    assert not s.ok and len(s.token_times) == 3 and s.finish_reason is None


def test_stall_longer_than_the_timeout(practice):
    # The two tokens before the stall come in about 0.1 s, within the 2 s bound on a loaded
    # machine; the stall (30 s) is far past it.
    s = fault(practice("kit"), "stall:30@2", timeout=2.0)
    assert not s.ok and s.error.startswith("Timeout") and len(s.token_times) == 2


def test_malformed_sse_line(practice):
    s = fault(practice("kit"), "malformed")
    assert not s.ok and s.error.startswith("MalformedSSE")


def test_stream_without_usage_counts_deltas(practice):
    s = fault(practice("kit"), "no-usage")
    assert s.ok and s.token_source == "deltas" and s.output_tokens == 20 and s.cached_tokens is None


def test_fault_shares_from_the_profile(practice):
    server = practice(kit_profile(name="flaky", faults={"error_500_share": 0.5}, seed=7))
    samples = [stream_chat(server.base_url, ask(f"x{i}", max_tokens=2)) for i in range(20)]
    failed = sum(not s.ok for s in samples)
    assert 3 <= failed <= 17


def test_429_when_the_queue_is_full(practice):
    server = practice(
        kit_profile(
            name="q", seats=1, faults={"queue_limit": 1}, output={"length": {"kind": "fixed", "tokens": 30}}
        )
    )
    samples = run_concurrent(server.base_url, [ask(f"q{i}", max_tokens=30) for i in range(4)])
    statuses = sorted("429" in (s.error or "") for s in samples)
    assert statuses.count(True) == 2, [s.error for s in samples]


# -- bad input: one-line errors, and the server keeps serving --------------------------------------


@pytest.mark.parametrize(
    "body,status,words",
    [
        (b"{not json", 400, "not valid JSON"),
        (
            json.dumps({"model": "nope", "messages": [{"role": "user", "content": "x"}]}).encode(),
            404,
            "does not exist",
        ),
        (json.dumps({"model": "local-chat"}).encode(), 400, "'messages' is required"),
        (
            json.dumps({"messages": [{"role": "user", "content": "x"}], "max_tokens": -3}).encode(),
            400,
            "positive integer",
        ),
        (
            json.dumps(
                {"messages": [{"role": "user", "content": "word " * 5000}], "max_tokens": 10}
            ).encode(),
            400,
            "exceeds the available context size",
        ),
    ],
)
def test_bad_input_gets_a_proper_error(practice, body, status, words):
    server = practice("kit")
    resp = requests.post(
        server.base_url + "/chat/completions",
        data=body,
        timeout=5,
        headers={"Content-Type": "application/json"},
    )
    assert resp.status_code == status
    message = resp.json()["error"]["message"]
    assert words in message and "\n" not in message
    assert stream_chat(server.base_url, ask("still there?", max_tokens=3)).ok


def test_vllm_mode_context_error_names_both_numbers(practice):
    server = practice("vllm")
    resp = requests.post(
        server.base_url + "/chat/completions", timeout=5, json=ask("word " * 5000, max_tokens=10)
    )
    assert resp.status_code == 400
    assert "maximum context length is 4096 tokens" in resp.json()["message"]


def test_api_key(practice):
    server = practice("kit", extra=["--api-key-env", "PRACTICE_KEY"], env={"PRACTICE_KEY": "s3cret-key"})
    assert requests.get(server.root + "/health", timeout=5).status_code == 200
    assert requests.get(server.base_url + "/models", timeout=5).status_code == 401
    wrong = stream_chat(server.base_url, ask("hi", max_tokens=2), api_key="wrong")
    assert wrong.error.startswith("HTTP 401")
    assert stream_chat(server.base_url, ask("hi", max_tokens=2), api_key="s3cret-key").ok
    assert "s3cret-key" not in server.out.read_text() + server.log.read_text()


# -- ground truth ----------------------------------------------------------------------------------


def test_ground_truth_matches_what_the_client_saw(practice):
    server = practice("ruler")
    s = stream_chat(server.base_url, ask("ruler", max_tokens=128), headers={"X-Request-Id": "truth-1"})
    truth = server.truth("truth-1")
    assert s.ok and truth["output_tokens"] == 128 and len(truth["sent"]) == 128
    # From a started server, one request: the server runs late by a millisecond or so, the wire
    # and the client's read add about as much; 10 and 20 ms are ten times that, and far from what
    # these guard against (a TTFT from another origin or clock: seconds).
    assert truth["ttft_s"] == pytest.approx(0.05, abs=0.01)
    assert s.ttft == pytest.approx(truth["ttft_s"], abs=0.02)
    gaps = [b - a for a, b in itertools.pairwise(truth["scheduled"])]
    assert statistics.mean(gaps) == pytest.approx(0.01, abs=1e-6)
    timing = requests.get(server.root + "/practice/timing", timeout=5).json()
    assert timing["events"] >= 128 and timing["lateness_p50_s"] < 0.005
