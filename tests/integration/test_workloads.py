"""Every workload beyond the labs' prompt sets, end to end on the practice server (a separate
process): bursts and the schedule error, length distributions, conversations on both kinds of
prefix cache, trace replay. Each request's truth (what the server received and cached) is read
back from the server and compared with what the record says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.workloads.schedules import arrival_offsets, coefficient_of_variation, gaps
from tests.conftest import ROOT, kit_profile
from tests.integration.test_sweep import levels, sweep

pytestmark = pytest.mark.slow

TRACE = ROOT / "data" / "traces" / "mooncake-small.jsonl"


def samples_of(book: Path) -> list[dict]:
    return [json.loads(line) for line in book.with_suffix(".samples.jsonl").read_text().splitlines()]


def fast_kit(name: str, **changes):
    return kit_profile(
        name=name,
        output={"length": {"kind": "fixed", "tokens": 12}},
        timing={"step_base_s": 0.004, "step_per_seq_s": 0.0002, "prefill_tokens_per_s": 200000},
        **changes,
    )


def test_burstiness_gives_gamma_departures_and_each_sample_its_lateness(practice, tmp_path):
    server = practice(fast_kit("burst", seats=64))
    book = tmp_path / "b.md"
    args = [
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--max-tokens",
        "4",
        "--labbook",
        str(book),
    ]
    out = sweep(
        *args, "--rate", "40", "--burstiness", "0.5", "--requests", "200", "--label", "burst", "--seed", "3"
    )
    assert out.returncode == 0, out.stderr
    assert "schedule lateness p50" in out.stdout
    (level,) = levels(book)
    assert level["arrival"] == "gamma" and level["burstiness"] == 0.5 and level["rate_rps"] == 40
    assert level["workload"] == {"kind": "prompts"}
    rows = samples_of(book)
    assert len(rows) == 200 and all(r["schedule_lateness_s"] >= -1e-4 for r in rows)
    # the schedule itself (each departure less its lateness) is seed 3's gamma draw, gap for gap:
    # shape 0.5 means CV sqrt(2) ~ 1.41, and these 200 gaps have 1.19, far from an even schedule
    # (CV 0) or a Poisson one (CV 1). The departures add the client's lateness, which a busy
    # machine bunches (CI once measured 2.0), so they are held only to what the samples say.
    due = sorted(r["departed_monotonic_s"] - r["schedule_lateness_s"] for r in rows)
    assert [t - due[0] for t in due] == pytest.approx(arrival_offsets(40, 200, False, 3, 0.5), abs=1e-3)
    assert 1.15 < coefficient_of_variation(gaps(due)) < 1.8
    departed = [r["departed_monotonic_s"] for r in rows]
    assert level["departure_gap_cv"] == pytest.approx(coefficient_of_variation(gaps(departed)), abs=1e-3)
    assert level["departure_gap_cv"] > 0.9
    lates = sorted(r["schedule_lateness_s"] for r in rows)
    assert level["schedule_lateness_s"]["p99"] == round(lates[197], 6)  # nearest rank: the 198th of 200
    # the departure the client recorded is when the server received it (same host, same clock):
    # never after it, and within the wire and the server's read (milliseconds, tenths on a loaded
    # machine). 1 s is far from both and from what it guards against: another clock (the wall
    # clock reads decades off).
    for row in rows[:20]:
        truth = server.truth(row["request_id"])
        assert 0 <= truth["received"] - row["departed_monotonic_s"] < 1.0
    # an even schedule: no burstiness, CV near 0
    out = sweep(*args, "--rate", "40", "--requests", "60", "--label", "even")
    assert out.returncode == 0, out.stderr
    assert levels(book)[-1]["arrival"] == "fixed-rate"
    rows = samples_of(book)[-60:]
    due = sorted(r["departed_monotonic_s"] - r["schedule_lateness_s"] for r in rows)
    assert coefficient_of_variation(gaps(due)) < 0.01 and due[-1] - due[0] == pytest.approx(59 / 40, abs=1e-3)


def test_bad_workload_options_are_one_line_before_anything_starts(tmp_path):
    base = ["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--labbook", str(tmp_path / "x.md")]
    cases = [
        (["--burstiness", "0.5"], "--burstiness needs --rate"),
        (["--rate", "5", "--burstiness", "0"], "--burstiness"),
        (["--rate", "5", "--burstiness", "1", "--poisson"], "one choice"),
        (["--input-tokens", "zipf:3"], "fixed:N, uniform:LO-HI"),
        (["--output-tokens", "file:/nonexistent/lengths"], "cannot read"),
        (["--workload", "conversations", "--rate", "2"], "closed loop"),
        (["--trace", "/nonexistent.jsonl"], "cannot read"),
        (["--trace", str(TRACE), "--rate", "3"], "sets its own times"),
    ]
    for extra, words in cases:
        out = sweep(*base, *extra)
        assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr, (
            extra,
            out.stderr,
        )
        assert len(out.stderr.strip().splitlines()) == 1


def test_length_distributions_are_sent_and_forced(practice, tmp_path):
    server = practice(fast_kit("lengths"))
    book = tmp_path / "l.md"
    lengths = tmp_path / "out.txt"
    lengths.write_text("5\n9\n17\n")
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--concurrency",
        "4",
        "--requests",
        "24",
        "--input-tokens",
        "uniform:40-400",
        "--output-tokens",
        f"file:{lengths}",
        "--labbook",
        str(book),
    )
    assert out.returncode == 0, out.stderr
    (level,) = levels(book)
    assert level["workload"] == {
        "kind": "prompts",
        "input_tokens": "uniform:40-400",
        "output_tokens": f"file:{lengths} (3 values)",
    }
    rows = samples_of(book)
    for row in rows:
        # the answer is as long as asked (the profile alone would give 12): forced with ignore_eos
        assert row["output_tokens"] == row["output_tokens_asked"] in (5, 9, 17)
        # the prompt as the server counted it: the asked length plus the chat template's few tokens
        assert 0 <= row["prompt_tokens"] - row["input_tokens_asked"] <= 8
        assert 40 <= row["input_tokens_asked"] <= 400
    assert level["output_tokens_asked"] == level["output_tokens_dist"]
    assert level["input_tokens_dist"]["p50"] > level["input_tokens_asked"]["p50"]
    # the run report's section: the workload table and the lengths drawn from the samples
    from harness.report.run_inputs import RunInputs
    from harness.report.run_report import levels_in
    from harness.report.workload_tables import section

    run = tmp_path / "run"
    run.mkdir()
    (run / "labbook.md").write_text(book.read_text())
    (run / "labbook.samples.jsonl").write_text(book.with_suffix(".samples.jsonl").read_text())
    inputs = RunInputs(run, None, {}, levels_in(run / "labbook.md"), 2.0, [], {})
    text = "\n".join(section(inputs))
    assert "## Workloads" in text and "uniform:40-400" in text and "](charts/run-lengths.png)" in text
    assert (run / "charts" / "run-lengths.png").stat().st_size > 5000


@pytest.mark.parametrize("cache", ["per-seat", "pooled"])
def test_conversations_reuse_their_history_on_both_kinds_of_cache(practice, tmp_path, cache):
    extra = {"prefix_cache": cache, "pool_tokens": 65536} if cache == "pooled" else {"prefix_cache": cache}
    server = practice(fast_kit("conv-" + cache, seats=4, **extra))
    book = tmp_path / "c.md"
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--workload",
        "conversations",
        "--turns",
        "fixed:3",
        "--message-tokens",
        "uniform:30-60",
        "--think-time",
        "0.05",
        "--concurrency",
        "4",
        "--requests",
        "24",
        "--max-tokens",
        "16",
        "--labbook",
        str(book),
    )
    assert out.returncode == 0, out.stderr
    assert "turn 3:" in out.stdout
    (level,) = levels(book)
    assert level["workload"] == {
        "kind": "conversations",
        "turns": "fixed:3",
        "message_tokens": "uniform:30-60",
        "think_s": 0.05,
    }
    # four users, each through about two conversations of three turns (the budget is shared)
    assert 8 <= level["conversations"] <= 10
    turns = level["per_turn"]
    assert [t["turn"] for t in turns] == [1, 2, 3] and sum(t["completed"] for t in turns) == 24
    assert turns[0]["cached_share"] < 0.10  # a new conversation: nothing of it cached
    assert turns[1]["cached_share"] > 0.5 and turns[2]["cached_share"] > 0.6  # its history is
    rows = samples_of(book)
    by_conv: dict[int, list[dict]] = {}
    for row in rows:
        by_conv.setdefault(row["conversation"], []).append(row)
    for conv in by_conv.values():
        assert sorted(r["turn"] for r in conv) == [1, 2, 3][: len(conv)]
        if len(conv) < 3:
            continue  # the level's budget ended it early
        conv.sort(key=lambda r: r["turn"])
        assert conv[0]["prompt_tokens"] < conv[1]["prompt_tokens"] < conv[2]["prompt_tokens"]
    # what the server says it cached is what the client recorded, request by request
    for row in rows:
        truth = server.truth(row["request_id"])
        assert truth["prefix_cache"] == cache and truth["cached_tokens"] == row["cached_tokens"]


def test_a_trace_replays_at_its_times_with_its_lengths(practice, tmp_path):
    server = practice(
        kit_profile(
            name="trace-vllm",
            mode="vllm",
            seats=64,
            prefix_cache="pooled",
            pool_tokens=65536,
            timing={"step_base_s": 0.004, "step_per_seq_s": 0.0002, "prefill_tokens_per_s": 200000},
        )
    )
    book = tmp_path / "t.md"
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--trace",
        str(TRACE),
        "--trace-block-tokens",
        "64",
        "--trace-time-scale",
        "2",
        "--labbook",
        str(book),
    )
    assert out.returncode == 0, out.stderr
    (level,) = levels(book)
    assert level["arrival"] == "trace" and level["workload"]["trace_format"] == "mooncake"
    assert level["completed"] == 100 and level["schedule_lateness_s"]["p99"] is not None
    trace = [json.loads(line) for line in TRACE.read_text().splitlines()]
    rows = sorted(samples_of(book), key=lambda r: r["trace_index"])
    start = rows[0]["departed_monotonic_s"] - rows[0]["schedule_lateness_s"]
    for want, row in zip(trace, rows, strict=True):
        assert row["output_tokens"] == want["output_length"]  # forced, as the trace asks
        due = start + want["timestamp"] / 1000 * 2  # time scale 2: twice as slow
        assert row["departed_monotonic_s"] - due == pytest.approx(row["schedule_lateness_s"], abs=2e-6)
    # equal hash ids are equal blocks: requests after the first of each preamble find it cached
    assert sum(1 for r in rows if r["cached_tokens"] >= 64) > 50


def headless(host: str, book: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable, "-m", "locust", "-f", str(ROOT / "locustfiles/llm_user.py"), "--headless",
        "-u", "2", "-r", "2", "-t", "4s", "--stop-timeout", "20", "--host", host, "--max-tokens", "8",
        "--only-summary", "--labbook", str(book), "--label", "headless", *extra,
    ]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_headless_locust_runs_conversations_and_lengths(practice, tmp_path):
    server = practice(fast_kit("headless-conv", seats=4))
    book = tmp_path / "h.md"
    done = headless(
        server.root, book, "--workload", "conversations", "--turns", "fixed:2", "--think-time", "0.02"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (level,) = levels(book)
    assert level["workload"]["kind"] == "conversations" and level["workload"]["turns"] == "fixed:2"
    turns = level["per_turn"]
    assert [t["turn"] for t in turns] == [1, 2]
    assert turns[0]["cached_share"] < 0.1 < 0.5 < turns[1]["cached_share"]
    assert all({"conversation", "turn"} <= set(row) for row in samples_of(book))
    book2 = tmp_path / "h2.md"
    done = headless(server.root, book2, "--input-tokens", "fixed:100", "--output-tokens", "uniform:3-6")
    assert done.returncode == 0, done.stdout + done.stderr
    (level,) = levels(book2)
    assert level["workload"] == {
        "kind": "prompts",
        "input_tokens": "fixed:100",
        "output_tokens": "uniform:3-6",
    }
    assert all(r["output_tokens"] == r["output_tokens_asked"] for r in samples_of(book2))


def test_a_bad_length_spec_stops_locust_in_one_line(tmp_path):
    done = headless("http://127.0.0.1:9", tmp_path / "x.md", "--input-tokens", "zipf:2")
    assert done.returncode == 2 and "--input-tokens" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("parser", [True, False])
def test_the_agent_loop_over_the_shared_preamble(practice, tmp_path, parser):
    server = practice(fast_kit("agent", seats=4, features={"tool_parser": parser, "json_schema": True}))
    book = tmp_path / "a.md"
    out = sweep(
        "--base-url", server.base_url, "--model", "local-chat", "--workload", "agent", "--turns", "fixed:3",
        "--concurrency", "2", "--requests", "6", "--max-tokens", "64", "--labbook", str(book),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    (level,) = levels(book)
    assert level["workload"]["kind"] == "agent"
    turns = level["per_turn"]
    assert [t["turn"] for t in turns] == [1, 2, 3]
    assert turns[1]["cached_share"] > 0.9  # the preamble and the whole loop so far
    assert turns[0]["prompt_tokens_mean"] > 1000  # the labs' preamble with its tools
    steps = [r["step"] for r in sorted(samples_of(book), key=lambda r: (r["conversation"], r["turn"]))]
    if parser:  # every answer a tool call: every later turn sends its tool result
        assert level["tool_call_turns"] == 6 and "tool_call_failures" not in level
        # the third answer still asks for a tool: each session ends at --turns, and says so
        assert level["conversations_ended_early"] == 2, level
        assert "still asked for a tool at turn 3" in level["workload_note"], level
        assert steps == ["user", "tool-result", "tool-result"] * 2
    else:  # the call written as text: no tool call, so the loop runs as plain turns, and says so
        assert level["tool_call_turns"] == 0 and "plain turns" in level["workload_note"]
        assert steps == ["user"] * 6


def test_sharegpt_conversations_and_prompts(practice, tmp_path):
    server = practice(fast_kit("sharegpt", seats=4))
    talk = ROOT / "data" / "conversations" / "sharegpt-small.json"
    book = tmp_path / "s.md"
    base = [
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--labbook",
        str(book),
        "--max-tokens",
        "8",
    ]
    out = sweep(
        *base,
        "--workload",
        "conversations",
        "--sharegpt",
        str(talk),
        "--concurrency",
        "2",
        "--requests",
        "10",
    )
    assert out.returncode == 0, out.stderr
    level = levels(book)[-1]
    assert level["workload"] == {
        "kind": "conversations",
        "think_s": 0.0,
        "conversation_file": "sharegpt-small.json",
        "file_conversations": 16,
    }
    scripts = [
        [m["value"] for m in c["conversations"] if m["from"] == "human"] for c in json.loads(talk.read_text())
    ]
    for row in samples_of(book):
        assert row["turn"] <= len(scripts[row["conversation"] - 1])
    out = sweep(*base, "--sharegpt", str(talk), "--concurrency", "2", "--requests", "4", "--label", "firsts")
    assert out.returncode == 0, out.stderr
    assert levels(book)[-1]["prompt_set"] == "sharegpt:sharegpt-small.json"


def test_no_level_finds_another_levels_prompts_in_the_cache(practice, tmp_path):
    server = practice(fast_kit("fresh", seats=2))
    book = tmp_path / "f.md"
    base = ["--base-url", server.base_url, "--model", "local-chat", "--labbook", str(book), "--warmup", "0"]
    out = sweep(
        *base, "--input-tokens", "fixed:300", "--concurrency", "1,1", "--requests", "4", "--label", "p"
    )
    assert out.returncode == 0, out.stderr
    out = sweep(
        *base, "--workload", "conversations", "--turns", "fixed:2", "--concurrency", "2,2", "--requests", "4"
    )
    assert out.returncode == 0, out.stderr
    first, second, conv1, conv2 = levels(book)
    # the same lengths drawn (--seed), new words every level: nothing but the template is reused
    assert first["input_tokens_asked"] == second["input_tokens_asked"]
    assert second["cached_tokens_mean"] < 0.05 * second["prompt_tokens_mean"]
    assert conv2["per_turn"][0]["cached_share"] < 0.1 and conv2["per_turn"][1]["cached_share"] > 0.5
