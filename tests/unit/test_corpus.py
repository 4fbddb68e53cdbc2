"""Every reader on every sample of the corpus of real outputs (tests/corpus, see its README): what
it reads must be the facts written beside the sample, read there by eye; what it cannot read must
be one line naming the engine or tool, never a silent null or a wrong number."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from harness.engines import llama_log, trtllm_log, vllm_log
from harness.engines import logs as engine_logs
from harness.measure.stream import whole_body_error
from harness.endpoints.chat import chat_parser
from harness.engines import memory
from harness.energy.sources import powermetrics
from harness.engines.definitions import load_engine
from harness.engines.metrics_sampler import COUNTERS, GAUGES, parse_metrics
from harness.machine import readers as machine_readers
from tests.corpus_samples import samples

MIN_SAMPLES = 80


def ids(group: list) -> list[str]:
    return [s.id for s in group]


def test_the_corpus_is_large_enough_and_every_sample_names_its_public_source():
    found = samples()
    assert len(found) >= MIN_SAMPLES, Counter(s.reader for s in found)
    for s in found:
        # a public page, or a recording made here that names the server, its build, the date and the command
        assert str(s.header.get("source", "")).startswith(("https://", "recorded here, ")), s.id
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
    elif failure and "To serve at least one request" in failure.get("message", ""):
        # V1's wording: the figures are in the message the sample quotes
        message = failure["message"]
        assert (
            f"({facts['failure']['max_seq_len']})" in message
            and facts["failure"]["kind"] == "max_seq_len_exceeds_kv"
        )
        assert f"is {facts['failure']['estimated_max_len']}." in message
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
    parser = chat_parser(0.0)
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


@pytest.mark.parametrize("sample", samples("whole-answer"), ids=ids(samples("whole-answer")))
def test_whole_answer(sample):
    """A whole (not streamed) JSON answer read where a stream was asked for is called what it is."""
    assert whole_body_error("application/json", sample.body.encode()).startswith("NotStreamed"), sample.id


# -- the accelerator and memory tools, as the harness invokes them --------------------------------------
# A sample of another form (nvidia-smi's table, rocm-smi's text) is what a user pastes; the harness
# never asks for it, and its reader must give no figure from it rather than a wrong one.

NA = "na"


def mib(value):
    return None if value == NA else value


@pytest.mark.parametrize("sample", samples("nvidia-smi"), ids=ids(samples("nvidia-smi")))
def test_nvidia_smi(sample):
    command = sample.expect.get("command") or ""
    if "--query-compute-apps" in command:  # used_memory is the last column whatever comes before it
        got = memory.nvidia_readings("0, 0", sample.body)
        assert got["gpu_process_mb"] == sum(p["used_mib"] for p in sample.expect["processes"])
        return
    got = memory.nvidia_readings(sample.body, None)
    if "--query-gpu=memory.used,memory.total" in command:
        (gpu,) = sample.expect["gpus"]
        assert (got["gpu_used_mb"], got["gpu_total_mb"]) == (
            mib(gpu["memory_used_mib"]),
            mib(gpu["memory_total_mib"]),
        )
        if NA in (gpu["memory_used_mib"], gpu["memory_total_mib"]):
            assert "reports no device memory" in got["unread"][0]
    else:  # a table or other columns: no figure, and one line saying so
        assert got.get("gpu_used_mb") is None and got.get("gpu_total_mb") is None, (sample.id, got)
        assert len(got["unread"]) == 1, (sample.id, got)


@pytest.mark.parametrize("sample", samples("rocm-smi"), ids=ids(samples("rocm-smi")))
def test_rocm_smi(sample):
    got = memory.rocm_readings(sample.body)
    if sample.body.lstrip().startswith("{"):
        cards = sample.expect["cards"]
        cards = cards.values() if isinstance(cards, dict) else cards
        used = sum(c.get("vram_used_bytes", 0) for c in cards) / 1e6
        assert got["rocm_vram_used_mb"] == pytest.approx(used)
        gtt = [c["gtt_used_bytes"] for c in cards if "gtt_used_bytes" in c]
        if gtt:
            assert got["rocm_gtt_used_mb"] == pytest.approx(sum(gtt) / 1e6)
    else:
        assert set(got) == {"unread"} and "gave no JSON" in got["unread"][0], sample.id


@pytest.mark.parametrize("sample", samples("vm_stat"), ids=ids(samples("vm_stat")))
def test_vm_stat(sample):
    want, got = sample.expect, memory.mac_pages(sample.body)
    page = want["page_size"] / 1e6
    assert got["mac_free_mb"] == pytest.approx(want["free"] * page)
    assert got["mac_wired_mb"] == pytest.approx(want["wired"] * page)
    assert got["mac_compressed_mb"] == pytest.approx(want["compressor"] * page)
    assert got["mac_used_mb"] == pytest.approx((want["active"] + want["wired"] + want["compressor"]) * page)


@pytest.mark.parametrize("sample", samples("list-devices"), ids=ids(samples("list-devices")))
def test_list_devices(sample):
    got = engine_logs.device_memory(sample.body)
    assert got == [
        {k: d[k] for k in ("device", "name", "total_mib", "free_mib")} for d in sample.expect["devices"]
    ]


@pytest.mark.parametrize("sample", samples("powermetrics"), ids=ids(samples("powermetrics")))
def test_powermetrics(sample):
    if (
        sample.expect.get("format") == "text"
    ):  # the harness asks for --format plist; text is refused in one line
        with pytest.raises(ValueError, match="no property list"):
            powermetrics.parse(sample.body.encode())
        return
    (first, *_) = powermetrics.parse(sample.body.encode())
    assert first.get("hw_model") == sample.expect["hw_model"]


@pytest.mark.parametrize("sample", samples("lscpu"), ids=ids(samples("lscpu")))
def test_lscpu(sample):
    got = machine_readers.lscpu(sample.body)
    for key in ("model", "cores", "logical_cpus"):
        if key in sample.expect:
            assert got.get(key) == sample.expect[key], (sample.id, key, got)


@pytest.mark.parametrize("sample", samples("sysctl"), ids=ids(samples("sysctl")))
def test_sysctl(sample):
    got = machine_readers.mac_machine(machine_readers.sysctl(sample.body))
    for key in ("model", "cores", "logical_cpus"):
        if key in sample.expect:
            assert got.get(key) == sample.expect[key], (sample.id, key, got)


@pytest.mark.parametrize("sample", samples("amd-smi"), ids=ids(samples("amd-smi")))
def test_amd_smi(sample):
    got = machine_readers.amd_smi_static(sample.body)
    assert got == [{k: g[k] for k in ("name", "driver", "memory_bytes")} for g in sample.expect["gpus"]]
    assert all("SERIAL" not in str(g) and "redacted" not in str(g) for g in got)


@pytest.mark.parametrize("sample", samples("docker-ps"), ids=ids(samples("docker-ps")))
def test_docker_ps(sample):
    for port, image in sample.expect["published"].items():
        assert machine_readers.docker_ps_image(sample.body, int(port)) == image, (sample.id, port)


# -- mlx_lm.server's console output -------------------------------------------------------------------


@pytest.mark.parametrize("sample", samples("mlx-log"), ids=ids(samples("mlx-log")))
def test_mlx_log(sample):
    ((found, _, line),) = engine_logs.expected_lines(sample.body, load_engine("mlx-lm")["log_expect"])
    assert found is sample.expect.get("ready", False), sample.id
    assert f"at {sample.expect['host']} on port {sample.expect['port']}" in line


def test_every_reader_of_the_corpus_has_its_test():
    tested = {
        name.removeprefix("test_").replace("_", "-")
        for name in globals()
        if name.startswith("test_") and name != "test_every_reader_of_the_corpus_has_its_test"
    }
    readers = {s.reader.replace("_", "-") for s in samples()}
    assert readers <= tested, readers - tested
