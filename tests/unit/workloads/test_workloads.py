"""Length distributions, conversations, traces and the workload fields of a level record: the
arithmetic, checked by hand with seeded generators."""

import json
import random

import pytest

from harness.measure.sample import Sample
from harness.workloads.traces import TracePlan, TraceRow, block_words, parse_trace, synthesise
from harness.workloads.level_part import cached_share, per_turn, workload_stats
from harness.workloads.conversations import Conversation, ConversationPlan
from harness.workloads.request import (
    LengthPlan,
    file_counts,
    forced_fields,
    parse_lengths,
    sized_prompt,
)
from harness.errors import ConfigError
from harness.practice.tokenizer import encode


def test_length_specs_draw_within_their_bounds():
    rng = random.Random(1)
    assert parse_lengths("--x", "128").describe() == "fixed:128"
    assert {parse_lengths("--x", "fixed:7").draw(rng) for _ in range(5)} == {7}
    uniform = parse_lengths("--x", "uniform:10-20")
    drawn = [uniform.draw(rng) for _ in range(2000)]
    assert min(drawn) == 10 and max(drawn) == 20  # both ends included
    normal = parse_lengths("--x", "normal:100,10")
    drawn = [normal.draw(rng) for _ in range(4000)]
    assert sum(drawn) / len(drawn) == pytest.approx(100, rel=0.02) and min(drawn) >= 1
    assert [parse_lengths("--x", "normal:1,50").draw(rng) for _ in range(50)].count(0) == 0  # at least 1
    counts = file_counts("--x", "# lengths\n3\n\n5\n")
    assert counts == [3, 5]
    from_file = parse_lengths("--x", "file:l.txt", counts)
    assert {from_file.draw(rng) for _ in range(100)} == {3, 5}
    assert from_file.describe() == "file:l.txt (2 values)"


@pytest.mark.parametrize(
    "text", ["zipf:3", "uniform:9-3", "uniform:1", "fixed:0", "fixed:2.5", "normal:x,1", "file:f"]
)
def test_a_bad_length_spec_is_one_line(text):
    with pytest.raises(ConfigError, match="--input-tokens"):
        parse_lengths("--input-tokens", text, [] if text.startswith("file") else None)


def test_a_bad_lengths_file_names_its_line():
    with pytest.raises(ConfigError, match="line 2"):
        file_counts("--x", "4\nfour\n")


def test_a_sized_prompt_has_its_length_on_the_practice_tokeniser():
    rng = random.Random(3)
    for n in (5, 50, 500):
        assert len(encode(sized_prompt(n, rng))) == n  # one word, one token
    assert sized_prompt(40, random.Random(1)) != sized_prompt(40, random.Random(2))


def test_a_length_plan_forces_the_output_and_tags_what_it_asked():
    plan = LengthPlan(parse_lengths("--i", "fixed:30"), parse_lengths("--o", "fixed:9"))
    job = plan.request("unused", random.Random(1))
    assert job.max_tokens == 9 and job.force_length
    assert job.tags == {"input_tokens_asked": 30, "output_tokens_asked": 9}
    assert len(encode(job.messages[0]["content"])) == 30
    assert plan.params() == {"input_tokens": "fixed:30", "output_tokens": "fixed:9"}
    plain = LengthPlan().request("the prompt", random.Random(1))
    assert plain.messages == [{"role": "user", "content": "the prompt"}] and plain.max_tokens is None
    assert forced_fields(9) == {"max_tokens": 9, "min_tokens": 9, "ignore_eos": True}


def test_a_conversation_sends_its_whole_history_every_turn():
    plan = ConversationPlan(parse_lengths("--turns", "fixed:3"), parse_lengths("--m", "fixed:5"))
    conv = Conversation(plan, 7, random.Random(1))
    first = conv.next_request()
    assert first.tags == {"conversation": 7, "turn": 1, "input_tokens_asked": 5}
    assert [m["role"] for m in first.messages] == ["system", "user"]
    conv.answered("an answer")
    second = conv.next_request()
    assert second.messages[: len(first.messages)] == first.messages  # the history is a prefix
    assert second.messages[2] == {"role": "assistant", "content": "an answer"}
    assert second.tags["turn"] == 2
    conv.answered("")
    assert conv.next_request().tags["turn"] == 3
    assert conv.next_request() is None  # three turns, then over
    other = Conversation(plan, 8, random.Random(1))
    assert other.next_request().messages[0] != first.messages[0]  # conversations do not share history


def sample(ok=True, prompt=100, cached=0, ttft=0.1, tags=None, t=0.0):
    s = Sample(t_send=t, ok=ok, prompt_tokens=prompt, cached_tokens=cached, tags=tags or {})
    s.t_sent, s.t_first, s.t_end, s.output_tokens = t, t + ttft, t + ttft + 0.9, 10
    return s


def test_the_per_turn_table_by_hand():
    samples = [
        sample(prompt=100, cached=0, ttft=0.5, tags={"conversation": 1, "turn": 1}),
        sample(prompt=100, cached=10, ttft=0.3, tags={"conversation": 2, "turn": 1}),
        sample(prompt=300, cached=200, ttft=0.1, tags={"conversation": 1, "turn": 2}),
        sample(ok=False, prompt=None, cached=None, tags={"conversation": 2, "turn": 2}),
    ]
    one, two = per_turn(samples)
    assert (one.turn, one.requests, one.completed, one.cached_share) == (1, 2, 2, 0.05)  # 10 of 200
    assert one.ttft_s.p50 == 0.3 and one.prompt_tokens_mean == 100.0
    assert (two.requests, two.completed, two.cached_share) == (2, 1, round(200 / 300, 4))
    assert cached_share([sample(cached=None)]) is None  # no server said: no share, never 0
    stats = workload_stats(samples, "conversations", {"turns": "fixed:2"}, open_loop=False)
    out = stats.to_dict()
    assert out["workload"] == {"kind": "conversations", "turns": "fixed:2"} and out["conversations"] == 2
    assert [row["turn"] for row in out["per_turn"]] == [1, 2] and "departure_gap_cv" not in out


def test_lateness_and_the_departures_spread_by_hand():
    times = ((0.0, 0.001), (1.0, 0.002), (3.0, 0.004))
    samples = [sample(t=t, tags={"schedule_lateness_s": late}) for t, late in times]
    out = workload_stats(samples, "prompts", {}, open_loop=True).to_dict()
    assert out["schedule_lateness_s"]["p99"] == 0.004 and out["schedule_lateness_s"]["p50"] == 0.002
    assert out["departure_gap_cv"] == pytest.approx(1 / 3, abs=1e-4)  # gaps 1 and 2: sd 0.5, mean 1.5
    assert out["input_tokens_dist"]["mean"] == 100.0 and "per_turn" not in out


def test_both_trace_formats_are_read_in_time_order():
    fmt, rows = parse_trace(
        '{"timestamp": 1500, "input_length": 40, "output_length": 7, "hash_ids": [1, 2]}\n'
        '{"timestamp": 0, "input_length": 20, "output_length": 3, "hash_ids": [1]}\n'
    )
    # only the blocks a prompt fills are kept: 40 tokens fill one block of 512
    assert fmt == "mooncake" and rows == [TraceRow(0.0, 20, 3, (1,)), TraceRow(1.5, 40, 7, (1,))]
    assert [(r.index, r.line) for r in rows] == [(1, 2), (0, 1)]  # their place in the file
    assert parse_trace(
        '{"timestamp": 0, "input_length": 40, "output_length": 7, "hash_ids": [1, 2]}', "t", 32
    )[1][0].hash_ids == (1, 2)
    fmt, rows = parse_trace("# t in out\n0.5 10 4\n0.0, 12, 5\n")
    assert fmt == "plain" and [r.t_s for r in rows] == [0.0, 0.5] and rows[0].input_tokens == 12


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("", "no requests"),
        ('{"timestamp": -1, "input_length": 2, "output_length": 2}', "timestamp"),
        ('{"timestamp": 0, "input_length": 0, "output_length": 2}', "input_length"),
        ('{"timestamp": 0, "input_length": 2, "output_length": 2, "hash_ids": "x"}', "hash_ids"),
        ("0 1", "SECONDS INPUT_TOKENS OUTPUT_TOKENS"),
    ],
)
def test_a_bad_trace_names_the_line(text, what):
    with pytest.raises(ConfigError, match=what):
        parse_trace(text, "t.jsonl")


def test_equal_hash_ids_give_equal_blocks():
    a = synthesise(TraceRow(0, 60, 1, (5, 6)), 32, random.Random(1)).split()
    b = synthesise(TraceRow(0, 60, 1, (5, 7)), 32, random.Random(2)).split()
    assert a[:32] == b[:32] == block_words(5, 32)  # the shared block, word for word
    assert a[32:] != b[32:]
    lone = synthesise(TraceRow(0, 50, 1), 32, random.Random(1))
    assert len(encode(lone)) == 50


def test_a_trace_plan_schedules_at_its_scaled_times():
    rows = (TraceRow(10.0, 20, 3, (), 0, 2), TraceRow(10.5, 20, 4, (), 2, 5), TraceRow(12.0, 20, 5, (), 1, 3))
    plan = TracePlan(rows, "t.txt", "plain", time_scale=0.5)
    offsets, jobs = plan.schedule()
    assert offsets == [0.0, 0.25, 1.0] and plan.rate() == pytest.approx(2.0) and plan.span_s() == 1.0
    assert [j.max_tokens for j in jobs] == [3, 4, 5] and all(j.force_length for j in jobs)
    tags = {"trace_index": 2, "trace_line": 5, "input_tokens_asked": 20, "output_tokens_asked": 4}
    assert jobs[1].tags == tags and plan.reordered()  # the file's row, not the sorted position
    assert jobs[1] is jobs[1] and jobs[0].messages == plan.job(0).messages  # built on demand, the same
    assert plan.params()["trace_format"] == "plain"


def test_the_sharegpt_reader_keeps_each_conversations_user_messages():
    from harness.workloads.sharegpt import read_sharegpt

    text = json.dumps(
        [
            {"id": "a", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"},
                                          {"from": "human", "value": "again"}]},
            {"id": "b", "conversations": [{"from": "gpt", "value": "only a reply"}]},
            {"id": "c", "conversations": [{"from": "user", "value": "one"}]},
        ]
    )  # fmt: skip
    assert read_sharegpt(text) == ([("hi", "again"), ("one",)], 1)
    lines = "\n".join(json.dumps(x) for x in json.loads(text))
    assert read_sharegpt(lines)[0] == [("hi", "again"), ("one",)]  # JSON Lines too
    for bad, words in (("", "empty"), ("[{", "not ShareGPT JSON"), ('[{"id": 1}]', "item 1"),
                       ('[{"conversations": []}]', "no conversation")):  # fmt: skip
        with pytest.raises(ConfigError, match=words):
            read_sharegpt(bad, "s.json")


def test_a_file_conversation_sends_its_own_messages_in_order():
    plan = ConversationPlan(parse_lengths("--t", "fixed:9"), parse_lengths("--m", "fixed:5"),
                            scripts=(("first", "second"),), source="s.json")  # fmt: skip
    conv = plan.start(1, random.Random(1))
    assert conv.turns == 2 and conv.next_request().messages[-1] == {"role": "user", "content": "first"}
    conv.answered("ok")
    assert conv.next_request().messages[-1]["content"] == "second" and conv.next_request() is None
    assert plan.params() == {"think_s": 0.0, "conversation_file": "s.json", "file_conversations": 1}


def test_the_agent_loop_answers_a_tool_call_with_a_tool_result():
    from harness.workloads.prompts import PREAMBLE

    plan = ConversationPlan(parse_lengths("--t", "fixed:3"), parse_lengths("--m", "fixed:5"), agent=True)
    agent = plan.start(2, random.Random(1))
    first = agent.next_request()
    assert first.messages[0] == {"role": "system", "content": PREAMBLE}  # the labs' preamble, shared
    assert first.tags == {"conversation": 2, "turn": 1, "step": "user"}
    names = [t["function"]["name"] for t in first.extra["tools"]]
    assert "gauge_read" in names and first.extra["tool_choice"] == "auto"
    agent.answered("", [{"id": "", "name": "gauge_read", "arguments": '{"target": "a"}'}])
    second = agent.next_request()
    assert second.tags["step"] == "tool-result"
    call = second.messages[-2]["tool_calls"][0]
    assert call["function"] == {"name": "gauge_read", "arguments": '{"target": "a"}'}
    assert second.messages[-1]["role"] == "tool" and second.messages[-1]["tool_call_id"] == call["id"]
    agent.answered("plain text", [])  # no tool called: the user's next message follows
    third = agent.next_request()
    assert third.tags["step"] == "user" and third.messages[-2] == {
        "role": "assistant",
        "content": "plain text",
    }


def test_tool_call_deltas_are_joined():
    from harness.endpoints.chat import chat_parser

    p = chat_parser(0.0)
    chunks = [
        {
            "choices": [
                {
                    "delta": {
                        "tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": ""}}]
                    }
                }
            ]
        },
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"a": '}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}}]},
        {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
    ]
    for i, chunk in enumerate(chunks):
        p.feed("data: " + json.dumps(chunk), float(i))
    p.feed("data: [DONE]", 9.0)
    s = p.finish(9.0)
    assert s.ok and s.tool_calls == [{"id": "c1", "name": "f", "arguments": '{"a": 1}'}]


def test_an_agent_level_that_called_no_tool_says_so():
    s = sample(tags={"conversation": 1, "turn": 1, "step": "user"})
    out = workload_stats([s], "agent", {}, open_loop=False).to_dict()
    assert out["tool_call_turns"] == 0 and "plain turns" in out["workload_note"]
    s.tool_calls = [{"id": "x", "name": "f", "arguments": "{}"}]
    out = workload_stats([s], "agent", {}, open_loop=False).to_dict()
    assert out["tool_call_turns"] == 1 and "workload_note" not in out
