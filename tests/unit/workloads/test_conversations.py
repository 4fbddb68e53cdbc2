"""Conversations and agent loops bounded: a history never grows past its
bound, answers without text are turns of their own with their kind, tool calls that cannot be run
are failures with their reason, a server asking for tools forever ends at --turns; and the level
record's notes (ended early, tool failures, cached counts past the prompt) validate against the
level schema."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.workloads import conversations as conv_mod
from harness.workloads.conversations import ConversationPlan, answer_kind, tool_problem
from harness.workloads.lengths import parse_lengths
from harness.workloads.prompts import PREAMBLE
from harness.measure.sample import Sample
from harness.endpoints.chat import chat_parser
from harness.endpoints.tool_calls import MAX_CALLS, join_tool_deltas
from harness.workloads.level_part import workload_stats
from tests.unit.properties import examples


def plan(turns: int = 3, agent: bool = False) -> ConversationPlan:
    return ConversationPlan(
        parse_lengths("--t", f"fixed:{turns}"), parse_lengths("--m", "fixed:5"), agent=agent
    )


def answer(text: str = "", ok: bool = True, fields=("content",), calls=None, cut: int = 0, dropped: int = 0):
    s = Sample(t_send=0.0, ok=ok, text=text, text_cut=cut, fields=list(fields), tool_calls=list(calls or []))
    s.tool_calls_dropped = dropped
    return s


def call(name: str = "gauge_read", arguments: str = '{"target": "a"}', i: int = 0) -> dict:
    return {"id": f"c{i}", "name": name, "arguments": arguments}


def run(conversation, answers: list[Sample]) -> list[Sample]:
    """Send each turn and take its answer, as the load user does; the answers given are those taken."""
    taken = []
    for s in answers:
        if conversation.next_request() is None:
            break
        conversation.take_answer(s)
        taken.append(s)
    return taken


def test_an_answer_past_what_a_sample_keeps_ends_its_conversation_with_the_reason():
    conversation = plan(turns=5).start(1, random.Random(1))
    taken = run(conversation, [answer("x" * 100, cut=4_000_000), answer("more")])
    assert len(taken) == 1 and conversation.next_request() is None  # no turn 2 sends it back
    assert "passed the 1,048,576 characters a sample keeps" in taken[0].tags["end_note"]
    assert "ends at turn 1" in taken[0].tags["end_note"]
    assert all(m["role"] != "assistant" for m in conversation.history)  # the cut answer never joined


def test_a_history_never_passes_its_bound(monkeypatch):
    monkeypatch.setattr(conv_mod, "MAX_HISTORY_CHARS", 2_000)
    conversation = plan(turns=50).start(1, random.Random(1))
    taken = run(conversation, [answer("y" * 300) for _ in range(50)])
    assert len(taken) < 50 and "history would pass its bound of 2,000" in taken[-1].tags["end_note"]
    assert conversation.chars <= 2_000
    assert sum(len(m["content"] or "") for m in conversation.history) == conversation.chars


@settings(max_examples=examples(60))
@given(st.lists(st.integers(0, 5_000), min_size=1, max_size=30), st.booleans())
def test_any_run_of_answers_keeps_the_history_within_its_bound(sizes, agent):
    """Whatever the answers' sizes (and tool calls, in the agent loop), every request sent holds
    no more than the bound, and every turn taken either joined or says why the conversation ended."""
    bound = 6_000 + (len(PREAMBLE) if agent else 0)  # the agent's preamble comes on top
    old, conv_mod.MAX_HISTORY_CHARS = conv_mod.MAX_HISTORY_CHARS, bound
    try:
        conversation = plan(turns=len(sizes), agent=agent).start(1, random.Random(1))
        for i, n in enumerate(sizes):
            job = conversation.next_request()
            if job is None:
                break
            sent = sum(conv_mod.message_chars(m) for m in job.messages)
            assert sent <= bound
            calls = [call(arguments=json.dumps({"target": "z" * n}))] if agent and i % 2 else []
            s = answer("w" * n, calls=calls)
            conversation.take_answer(s)
    finally:
        conv_mod.MAX_HISTORY_CHARS = old


def test_answers_without_text_are_turns_of_their_own_with_their_kind():
    conversation = plan(turns=4).start(1, random.Random(1))
    answers = [
        answer(fields=("reasoning_content",)),
        answer(fields=()),
        answer(ok=False, fields=()),
        answer("words"),
    ]
    taken = run(conversation, answers)
    assert [s.tags.get("answer") for s in taken] == ["reasoning-only", "empty", "failed", None]
    said = [m["content"] for m in conversation.history if m["role"] == "assistant"]
    assert said == ["", "", "", "words"]  # each was a turn: its (empty) answer is in the history
    record = workload_stats(taken, "conversations", {}, open_loop=False).to_dict()
    assert record["answers_without_text"] == {"reasoning-only": 1, "empty": 1, "failed": 1}
    assert answer_kind(answer(fields=("reasoning",))) == "reasoning-only"


def test_tool_calls_that_cannot_be_run_are_failures_answered_by_an_error():
    agent = plan(turns=3, agent=True).start(1, random.Random(1))
    bad = [
        call("gauge_read", '{"target": "Par'),
        call("gauge_read", "[1, 2]", 1),
        call("rm_rf_root\x1b[2J", "{}", 2),
    ]
    (first,) = run(agent, [answer(calls=bad)])
    assert first.tags["tool_failures"] == 3 and "end_note" not in first.tags
    errors = first.tags["tool_errors"]
    assert "arguments are not JSON" in errors[0] and "JSON but not an object" in errors[1]
    assert errors[2].startswith("unknown function 'rm_rf_root?': not among the") and "\x1b" not in errors[2]
    results = [json.loads(m["content"]) for m in agent.next_request().messages if m["role"] == "tool"]
    assert [r["ok"] for r in results] == [False, False, False] and results[2]["error"] == errors[2]
    record = workload_stats([first], "agent", {}, open_loop=False).to_dict()
    assert record["tool_call_failures"] == 3 and "3 tool call(s) could not be run" in record["workload_note"]


def test_a_server_asking_for_tools_forever_ends_at_the_turns_bound():
    agent = plan(turns=4, agent=True).start(1, random.Random(1))
    taken = run(agent, [answer(calls=[call(i=i)]) for i in range(10)])
    assert len(taken) == 4 and agent.next_request() is None
    assert "still asked for a tool at turn 4, the last --turns allows" in taken[-1].tags["end_note"]
    record = workload_stats(taken, "agent", {}, open_loop=False).to_dict()
    assert record["conversations_ended_early"] == 1 and "ended early" in record["workload_note"]


def test_thousands_of_calls_in_one_answer_are_one_failure_and_bounded():
    calls = [
        {"index": i, "id": f"c{i}", "function": {"name": "gauge_read", "arguments": "{}"}}
        for i in range(3000)
    ]
    kept: list[dict] = []
    dropped = join_tool_deltas(kept, calls)
    assert len(kept) == MAX_CALLS and dropped == 3000 - MAX_CALLS
    agent = plan(turns=5, agent=True).start(1, random.Random(1))
    (s,) = run(agent, [answer(calls=kept, dropped=dropped)])
    assert s.tags["tool_failures"] == 1 and f"more than {MAX_CALLS} tool calls" in s.tags["tool_errors"][0]
    assert "ends at turn 1" in s.tags["end_note"] and agent.next_request() is None


def test_tool_problem_by_hand():
    offered = {"gauge_read"}
    assert tool_problem(call(), offered) is None
    assert tool_problem(call(arguments=""), offered) is None  # no arguments: an empty object
    deep = "[" * 100_000 + "]" * 100_000
    assert "arguments are not JSON" in tool_problem(call(arguments=deep), offered)  # no RecursionError out


def test_a_huge_answer_is_kept_to_its_limit_and_counted_past_it():
    p = chat_parser(0.0, text_limit=1_000)
    for i in range(50):
        p.feed("data: " + json.dumps({"choices": [{"delta": {"content": "z" * 64}}]}), float(i))
    p.feed("data: " + json.dumps({"choices": [{"delta": {}, "finish_reason": "stop"}]}), 60.0)
    p.feed("data: [DONE]", 61.0)
    s = p.finish(62.0)
    assert s.ok and len(s.text) == 1_000 and s.text_cut == 50 * 64 - 1_000 and s.output_tokens == 50


def test_cached_tokens_past_the_prompt_are_flagged_and_never_a_share_past_one():
    p = chat_parser(0.0)
    p.feed("data: " + json.dumps({"choices": [{"delta": {"content": "a"}, "finish_reason": "stop"}]}), 1.0)
    usage = {"prompt_tokens": 5, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 9000}}
    p.feed("data: " + json.dumps({"choices": [], "usage": usage}), 1.0)
    p.feed("data: [DONE]", 2.0)
    s = p.finish(2.0)
    s.tags = {"conversation": 1, "turn": 1}
    assert s.cached_tokens is None and "9000 cached tokens of a 5-token prompt" in s.cached_note
    record = workload_stats([s], "conversations", {}, open_loop=False).to_dict()
    assert record["per_turn"][0]["cached_share"] is None
    assert record["cached_note"].startswith("1 of 1 request(s) had no cached count taken")


@pytest.mark.parametrize(
    ("usage", "note"),
    [
        ({"prompt_tokens_details": {"cached_tokens": -5}}, "cached_note"),
        ({"prompt_tokens_details": {"cached_tokens": "3"}}, "cached_note"),
        ({"prompt_tokens_details": {"cached_tokens": 2.5}}, "cached_note"),
        ({"completion_tokens": 1e308}, "usage_note"),
        ({"completion_tokens": 3.5}, "usage_note"),
    ],
)
def test_a_count_that_is_no_count_is_flagged_not_silently_dropped(usage, note):
    """A negative, fractional or string cached count, or a completion count of 1e308, was dropped
    without a word; each is now no count, said in the sample (and so in the level's note)."""
    p = chat_parser(0.0)
    p.feed("data: " + json.dumps({"choices": [{"delta": {"content": "a"}, "finish_reason": "stop"}]}), 1.0)
    p.feed("data: " + json.dumps({"choices": [], "usage": {"prompt_tokens": 5, **usage}}), 1.0)
    p.feed("data: [DONE]", 2.0)
    s = p.finish(2.0)
    assert s.ok and s.cached_tokens is None and s.output_tokens == 1
    assert "no count" in (s.cached_note or "") or "is not a token count" in (s.usage_note or ""), s
    assert getattr(s, note), s
    if note == "usage_note":
        assert s.token_source == "usage-rejected"


def test_the_level_record_with_every_new_note_validates(tmp_path):
    """A level record carrying each of the new fields is written and read back valid."""
    from harness.records.level import LevelContext
    from harness.measure.levels import level_record
    from harness.records.notebook import append_record, read_records

    samples = []
    for i, tags in enumerate(
        [
            {"conversation": 1, "turn": 1, "answer": "reasoning-only", "schedule_lateness_s": 0.0},
            {"conversation": 1, "turn": 2, "tool_failures": 2, "tool_errors": ["x: arguments are not JSON"]},
            {"conversation": 1, "turn": 3, "end_note": "the history would pass: the conversation ends"},
        ]
    ):
        s = Sample(t_send=i, ok=True, prompt_tokens=10, cached_tokens=None, tags=tags)
        s.t_sent, s.t_first, s.t_end, s.output_tokens, s.token_times = i, i + 0.1, i + 0.5, 3, [i + 0.1]
        s.cached_note = "the server said 99 cached tokens of a 10-token prompt: no count"
        samples.append(s)
    stats = workload_stats(samples, "agent", {}, open_loop=False)
    context = LevelContext("t", "fake", "m", "http://x/v1", "conversations", 16, 0.0)
    record = level_record(samples, 1, 3.0, context, "2026-01-01T00:00:00Z", workload=stats).to_dict()
    assert record["conversations_ended_early"] == 1 and record["tool_call_failures"] == 2
    assert record["answers_without_text"] == {"reasoning-only": 1} and record["cached_note"]
    book = tmp_path / "b.md"
    append_record(book, record, "level")
    result = read_records(book, "level")
    assert not result.warnings and result.records[0]["tool_call_failures"] == 2


LLAMA_REFUSAL = "HTTP 400: the request exceeds the available context size, try increasing it"
VLLM_REFUSAL = (
    "HTTP 400: This model's maximum context length is 2048 tokens. However, you requested 2100 tokens "
    "(1972 in the messages, 128 in the completion). Please reduce the length of the messages or completion."
)


@pytest.mark.parametrize("error", [LLAMA_REFUSAL, VLLM_REFUSAL, "HTTP 400: context_length_exceeded"])
def test_a_turn_refused_for_the_context_ends_its_conversation(error):
    """Once, turns 4-6 all got 400s, each sending a longer history. Now the refused turn
    ends its conversation; its sample says how many turns were not sent and why."""
    conversation = plan(turns=6).start(1, random.Random(1))
    refused = answer(ok=False, fields=())
    refused.error = error
    taken = run(conversation, [answer("one"), answer("two"), refused, answer("four")])
    assert len(taken) == 3 and conversation.next_request() is None  # turn 4 is never sent
    note = taken[2].tags["end_note"]
    assert note.startswith("the server refused turn 3 for its context (HTTP 400: ")
    assert note.endswith("the conversation ends at turn 3; 3 later turn(s) not sent")
    assert taken[2].tags["turns_not_sent"] == 3
    record = workload_stats(taken, "conversations", {}, open_loop=False).to_dict()
    assert record["turns_not_sent"] == 3 and record["conversations_ended_early"] == 1
    assert "the first as the server refused turn 3 for its context" in record["workload_note"]
    assert "3 turn(s) not sent in all" in record["workload_note"]


def test_other_failures_and_the_last_turn_refused_leave_nothing_unsent():
    conversation = plan(turns=3).start(1, random.Random(1))
    failed = answer(ok=False, fields=())
    failed.error = "HTTP 500: boom"  # not the context: the conversation goes on, as before
    last = answer(ok=False, fields=())
    last.error = LLAMA_REFUSAL
    taken = run(conversation, [answer("one"), failed, last])
    assert len(taken) == 3 and "end_note" not in taken[1].tags
    assert "turns_not_sent" not in taken[2].tags and "ends at turn 3" in taken[2].tags["end_note"]
    assert not conv_mod.context_refusal("HTTP 500: context window full")  # a 400 only
    assert not conv_mod.context_refusal("HTTP 400: bad JSON") and not conv_mod.context_refusal(None)


def test_an_agent_session_refused_for_the_context_ends_too():
    session = plan(turns=4, agent=True).start(1, random.Random(1))
    refused = answer(ok=False, fields=())
    refused.error = VLLM_REFUSAL
    taken = run(session, [answer(calls=[call()]), refused, answer("x")])
    assert len(taken) == 2 and taken[1].tags["turns_not_sent"] == 2


def test_the_context_remedy_names_the_conversations_knobs():
    """The remedy printed beside a conversation level's refusal names --turns, --message-tokens, the
    history bound and the server's context, not the prefix sets' 1,024 tokens per sequence; a
    prompts level keeps the lab's row."""
    from harness.measure import level_checks as ts
    from harness.report.troubleshooting import load_errors

    rules = list(load_errors())
    row = ts.error_remedy(LLAMA_REFUSAL, rules, "conversations")
    assert row is not None and row["id"] == "conversation-past-context"
    for words in ("--turns", "--message-tokens", "history bound", "context per sequence"):
        assert words in row["cause"] + row["remedy"], words
    assert "1,024" not in row["cause"] + row["remedy"]
    assert ts.error_remedy(LLAMA_REFUSAL, rules, "agent")["id"] == "conversation-past-context"
    assert ts.error_remedy(LLAMA_REFUSAL, rules)["id"] == "prompt-past-context"
    level = {"first_error": LLAMA_REFUSAL, "workload": {"kind": "conversations"}}
    (found,) = ts.error_rules("chat", {4: level}, rules)
    assert "--turns" in found[1] and "prefix set" not in found[1]


def test_a_record_with_turns_not_sent_validates(tmp_path):
    from harness.records.level import LevelContext
    from harness.measure.levels import level_record
    from harness.records.notebook import append_record, read_records

    conversation = plan(turns=5).start(1, random.Random(1))
    answers = []
    for i in range(3):
        s = answer("fine" if i < 2 else "", ok=i < 2, fields=("content",) if i < 2 else ())
        s.t_sent, s.t_first, s.t_end, s.output_tokens, s.token_times = i, i + 0.1, i + 0.5, 3, [i + 0.1]
        s.prompt_tokens = 10
        if i == 2:
            s.error, s.t_first, s.token_times, s.output_tokens = LLAMA_REFUSAL, None, [], None
        answers.append(s)
    taken = run(conversation, answers)
    stats = workload_stats(taken, "conversations", {}, open_loop=False)
    context = LevelContext("t", "fake", "m", "http://x/v1", "conversations", 16, 0.0)
    record = level_record(taken, 1, 3.0, context, "2026-01-01T00:00:00Z", workload=stats).to_dict()
    assert record["turns_not_sent"] == 2 and record["failed"] == 1
    book = tmp_path / "b.md"
    append_record(book, record, "level")
    result = read_records(book, "level")
    assert not result.warnings and result.records[0]["turns_not_sent"] == 2
