"""Workloads against the real CPU llama-server (Gemma 3 270M): a conversation's later turns read
from the slot that kept its history, and a forced output length is honoured (``ignore_eos``)."""

from __future__ import annotations

import json

import pytest

from harness.records.notebook import read_records
from harness.engines import llama_cpu
from tests.conftest import free_port
from tests.integration.test_sweep import sweep

pytestmark = [pytest.mark.llama, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("llama-workloads") / "llama-server.log"
    # --swa-full: Gemma 3's sliding-window cache must hold the whole context for prefix reuse
    launcher = llama_cpu.launcher(port, log, slots=4, ctx_per_slot=2048, swa_full=True)
    launcher.start(timeout=120)
    yield f"http://127.0.0.1:{port}/v1"
    launcher.stop()


def level(book):
    (record,) = read_records(book, "level", select=lambda o: "concurrency" in o).records
    return record


def test_conversations_on_fewer_users_than_slots_reuse_their_history(server, tmp_path):
    book = tmp_path / "c.md"
    out = sweep(
        "--base-url", server, "--model", llama_cpu.MODEL_ALIAS, "--workload", "conversations",
        "--turns", "fixed:3", "--message-tokens", "uniform:40-80", "--concurrency", "2",
        "--requests", "12", "--max-tokens", "16", "--engine", "llama-server", "--server-slots", "4",
        "--labbook", str(book),
        timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    turns = level(book)["per_turn"]
    assert [t["turn"] for t in turns] == [1, 2, 3]
    # two conversations on four slots: each keeps its slot, so its history is cached
    assert turns[0]["cached_share"] < 0.10
    assert turns[1]["cached_share"] > 0.5 and turns[2]["cached_share"] > 0.5
    rows = [json.loads(line) for line in book.with_suffix(".samples.jsonl").read_text().splitlines()]
    assert all(r["ok"] and r["cached_tokens"] is not None for r in rows)


def test_a_forced_output_length_is_honoured(server, tmp_path):
    book = tmp_path / "l.md"
    out = sweep(
        "--base-url", server, "--model", llama_cpu.MODEL_ALIAS, "--concurrency", "2", "--requests", "6",
        "--input-tokens", "uniform:50-200", "--output-tokens", "fixed:24", "--labbook", str(book),
        timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    record = level(book)
    assert record["output_tokens_dist"]["p50"] == record["output_tokens_dist"]["mean"] == 24.0
    assert record["finish_reasons"] == {"length": 6}
    # what was sent, as the server counted it: the asked length plus the chat template's own
    # tokens, the same for every request (this GGUF falls back to ChatML, whose markers are text
    # to Gemma's vocabulary: 24 tokens), so the synthesised words are one token each
    rows = [json.loads(line) for line in book.with_suffix(".samples.jsonl").read_text().splitlines()]
    overheads = {r["prompt_tokens"] - r["input_tokens_asked"] for r in rows}
    assert len(overheads) == 1 and 0 < overheads.pop() < 40
