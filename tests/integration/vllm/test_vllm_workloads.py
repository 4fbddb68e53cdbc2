"""Workloads against vLLM's CPU build (Gemma 3 270M): a conversation's later turns read from the
block cache, forced output lengths are honoured (``min_tokens``, ``ignore_eos``), and a small
trace replays with the output lengths it asks for."""

from __future__ import annotations

import json

import pytest

from harness.records.notebook import read_records
from harness.engines import vllm_cpu
from tests.integration.test_sweep import sweep

pytestmark = [pytest.mark.vllm]  # skipped (or, under HARNESS_VLLM_REQUIRED=1, failed) in tests/conftest.py


def level(book):
    (record,) = read_records(book, "level", select=lambda o: "concurrency" in o).records
    return record


def rows(book):
    return [json.loads(line) for line in book.with_suffix(".samples.jsonl").read_text().splitlines()]


def test_conversations_read_their_history_from_the_block_cache(base_url, tmp_path):
    book = tmp_path / "c.md"
    out = sweep(
        "--base-url", base_url, "--model", vllm_cpu.SERVED_NAME, "--workload", "conversations",
        "--turns", "fixed:4", "--message-tokens", "fixed:200", "--concurrency", "2",
        "--requests", "8", "--max-tokens", "16", "--engine", "vllm", "--labbook", str(book),
        timeout=900,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    turns = level(book)["per_turn"]
    assert [t["turn"] for t in turns] == [1, 2, 3, 4]
    # a new conversation shares no whole block with another (the CPU build's blocks are 128
    # tokens); a turn finds every whole block of its history in the pool, whatever sequence slot
    # serves it, so the share grows with the history: about 128 of 450 tokens at turn 2, 384 of
    # 670 at turn 3, 640 of 900 at turn 4
    assert turns[0]["cached_share"] < 0.10
    assert 0.2 < turns[1]["cached_share"] < turns[2]["cached_share"] < turns[3]["cached_share"]
    assert turns[2]["cached_share"] > 0.5 and turns[3]["cached_share"] > 0.6
    assert all(r["cached_tokens"] % 128 == 0 for r in rows(book))  # whole blocks only


def test_forced_lengths_and_a_trace_replay(base_url, tmp_path):
    book = tmp_path / "l.md"
    out = sweep(
        "--base-url", base_url, "--model", vllm_cpu.SERVED_NAME, "--concurrency", "2", "--requests", "4",
        "--input-tokens", "uniform:40-120", "--output-tokens", "uniform:10-30", "--labbook", str(book),
        timeout=900,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert all(r["output_tokens"] == r["output_tokens_asked"] for r in rows(book))
    trace = tmp_path / "t.txt"
    trace.write_text("0.0 80 12\n0.5 60 20\n1.0 100 7\n1.5 40 16\n")
    book = tmp_path / "t.md"
    out = sweep(
        "--base-url", base_url, "--model", vllm_cpu.SERVED_NAME, "--trace", str(trace),
        "--labbook", str(book), timeout=900,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    got = sorted(rows(book), key=lambda r: r["trace_index"])
    assert [r["output_tokens"] for r in got] == [12, 20, 7, 16]
    assert level(book)["schedule_lateness_s"]["p99"] < 0.5
