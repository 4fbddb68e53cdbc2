"""The fault matrix, round three: conversations and agent loops against
hostile servers. A server answering 5 MB a turn never grows the history (the conversation ends,
the reason in the record); an answer with reasoning and no content is a turn of its own; a server
asking for tools forever ends at --turns; malformed arguments, unknown functions and thousands of
calls in one answer are failures with their reason. Small sizes: each run is a few requests."""

from __future__ import annotations

import pytest

from harness.records.notebook import read_records
from tests.integration.faults.hostile import MODEL, HostileServer
from tests.integration.faults.test_faults import TOTAL, _run


def _converse(fault: str, book, kind: str, turns: int, requests: int):
    with HostileServer(fault) as srv:
        args = ["sweep", "--base-url", srv.base_url, "--model", MODEL, "--concurrency", "1"]
        args += ["--requests", str(requests), "--timeout", str(TOTAL), "--warmup", "0"]
        args += ["--labbook", str(book), "--metrics-url", "none", "--no-endpoint-check"]
        args += ["--workload", kind, "--turns", f"fixed:{turns}", "--message-tokens", "fixed:5"]
        proc = _run(args, (requests + 1) * TOTAL)
        bodies, sizes = list(srv.bodies), list(srv.body_sizes)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-3000:]
    result = read_records(book, "level")  # read validates every record against its schema
    assert not result.warnings, result.warnings
    (level,) = result.records
    return level, bodies, sizes, proc.stdout


@pytest.mark.slow
def test_a_server_answering_5_mb_a_turn_never_grows_the_history(tmp_path):
    """Each turn sent the last answer back whole (turn 6 sent 25 MiB). Now an answer past what a
    sample keeps ends its conversation at that turn: every request stays small, the record says why."""
    level, _, sizes, out = _converse("huge-answer", tmp_path / "b.md", "conversations", 4, 3)
    assert level["completed"] == 3 and max(sizes) < 20_000, sizes
    assert level["conversations"] == 3 and level["conversations_ended_early"] == 3, level
    assert "passed the 1,048,576 characters a sample keeps" in level["workload_note"], level
    assert "ended early" in out


@pytest.mark.slow
def test_a_reasoning_only_answer_is_a_turn_of_its_own(tmp_path):
    level, bodies, _, _ = _converse("reasoning-only", tmp_path / "b.md", "conversations", 2, 2)
    assert level["completed"] == 2 and level["answers_without_text"] == {"reasoning-only": 2}, level
    assert [m["role"] for m in bodies[1]["messages"]][-2:] == ["assistant", "user"]
    assert bodies[1]["messages"][-2]["content"] == ""  # it was a turn: an empty answer, then the next


@pytest.mark.slow
def test_a_server_asking_for_tools_forever_ends_at_the_turns_bound(tmp_path):
    level, bodies, _, _ = _converse("tool-forever", tmp_path / "b.md", "agent", 3, 4)
    assert level["completed"] == 4 and level["conversations"] == 2, level
    assert level["conversations_ended_early"] == 1, level
    assert "still asked for a tool at turn 3" in level["workload_note"], level
    assert [b["messages"][-1]["role"] for b in bodies] == ["user", "tool", "tool", "user"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "fault, failures, words",
    [
        ("bad-tool-args", 2, "gauge_read: arguments are not JSON"),
        ("unknown-tool", 1, "unknown function 'rm_rf_root': not among the"),
    ],
)
def test_tool_calls_that_cannot_be_run_are_failures_with_their_reason(fault, failures, words, tmp_path):
    """Each answer of the two turns makes the same calls: each call a failure, answered by an
    error result the next turn sends."""
    level, bodies, _, _ = _converse(fault, tmp_path / "b.md", "agent", 2, 2)
    assert level["completed"] == 2 and level["tool_call_failures"] == 2 * failures, level
    assert words in level["workload_note"], level
    results = [m for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert len(results) == failures and all('"ok": false' in m["content"] for m in results)


@pytest.mark.slow
def test_thousands_of_calls_in_one_answer_are_one_failure_each_and_end_the_conversation(tmp_path):
    level, bodies, sizes, _ = _converse("tool-flood", tmp_path / "b.md", "agent", 3, 2)
    assert level["completed"] == 2 and level["tool_call_failures"] == 2, level
    assert level["conversations_ended_early"] == 2 and "more than 64 tool calls" in level["workload_note"]
    assert all(b["messages"][-1]["role"] == "user" for b in bodies) and max(sizes) < 20_000


@pytest.mark.slow
def test_a_conversation_refused_for_its_context_ends_there(tmp_path):
    """Once, turns 4-6 of a conversation all got 400s, each sending a longer history, and
    the remedy spoke of the prefix sets' 1,024 tokens per sequence. Now the refused turn ends its
    conversation (the next request starts a new one), the turns not sent are counted with the
    reason, and the remedy names the conversation's own knobs."""
    level, bodies, _, out = _converse("context-at-turn-3", tmp_path / "b.md", "conversations", 6, 6)
    turns = [sum(1 for m in b["messages"] if m["role"] == "user") for b in bodies]
    assert turns == [1, 2, 3, 1, 2, 3], turns  # no turn 4 ever sent
    assert level["completed"] == 4 and level["failed"] == 2, level
    assert level["conversations_ended_early"] == 2 and level["turns_not_sent"] == 6, level
    assert (
        "the server refused turn 3 for its context (HTTP 400: the request exceeds" in level["workload_note"]
    )
    assert "3 later turn(s) not sent" in level["workload_note"]
    assert "--turns" in out and "--message-tokens" in out and "1,024 tokens per sequence" not in out
