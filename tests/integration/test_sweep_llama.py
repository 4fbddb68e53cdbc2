"""The lab's sweeps against the real CPU llama-server (Gemma 3 270M): baseline and prefix pair."""

from __future__ import annotations

import pytest

from harness.engines import llama_cpu
from harness.records.notebook import read_records
from tests.conftest import free_port
from tests.integration.test_sweep import sweep

pytestmark = [pytest.mark.llama, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("llama-sweep") / "llama-server.log"
    # --swa-full: Gemma 3's sliding-window cache must hold the whole context for prefix reuse
    launcher = llama_cpu.launcher(port, log, slots=4, ctx_per_slot=2048, swa_full=True)
    launcher.start(timeout=120)
    yield f"http://127.0.0.1:{port}/v1"
    launcher.stop()


def records(book, label):
    return [
        r
        for r in read_records(book, "level", select=lambda o: "concurrency" in o).records
        if r["label"] == label
    ]


def test_baseline_sweep_completes_with_usage_counts(server, tmp_path):
    book = tmp_path / "labbook.md"
    out = sweep(
        "--base-url",
        server,
        "--model",
        llama_cpu.MODEL_ALIAS,
        "--concurrency",
        "1,5,10,20",
        "--requests",
        "10",
        "--max-tokens",
        "16",
        "--prompt-set",
        "mixed",
        "--label",
        "cpu-baseline",
        "--engine",
        "llama-server",
        "--server-slots",
        "4",
        "--context-length",
        "2048",
        "--labbook",
        str(book),
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    levels = records(book, "cpu-baseline")
    assert [r["concurrency"] for r in levels] == [1, 5, 10, 20]
    for r in levels:
        assert r["failed"] == 0, r["first_error"]
        assert r["token_counts"] == "usage" and r["cached_tokens_mean"] is not None
    assert levels[-1]["server_metrics"]["llamacpp:requests_deferred"]["max"] > 0  # 20 people, 4 slots
    # batching: at c = 5 the server ran several requests at once (its own gauge; a throughput
    # comparison between two levels is a benchmark's, and fails whenever the cores are shared)
    assert levels[1]["server_metrics"]["llamacpp:requests_processing"]["max"] > 1


def test_prefix_pair_control_first(server, tmp_path):
    book = tmp_path / "labbook.md"
    # Two rounds at c=2 for the shared set: in the first, one of the two requests may land on a slot that has
    # never seen the preamble (per-slot caching), so one round alone can sit right at the 50 % line.
    for prompt_set, label, count in (
        ("unique-prefix", "cpu-prefix-control", "2"),
        ("shared-prefix", "cpu-prefix-shared", "4"),
    ):
        out = sweep(
            "--base-url",
            server,
            "--model",
            llama_cpu.MODEL_ALIAS,
            "--concurrency",
            "1,2",
            "--requests",
            count,
            "--max-tokens",
            "8",
            "--prompt-set",
            prompt_set,
            "--label",
            label,
            "--labbook",
            str(book),
            timeout=600,
        )
        assert out.returncode == 0, out.stdout + out.stderr
    control, shared = records(book, "cpu-prefix-control"), records(book, "cpu-prefix-shared")
    for c, s in zip(control, shared, strict=True):
        assert c["failed"] == 0 and s["failed"] == 0
        assert c["cached_tokens_mean"] < 0.1 * c["prompt_tokens_mean"]
    assert shared[-1]["cached_tokens_mean"] > 0.5 * shared[-1]["prompt_tokens_mean"]
    assert shared[-1]["ttft_s"]["p50"] < control[-1]["ttft_s"]["p50"]
