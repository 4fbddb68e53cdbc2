"""The probe's judges of tool-call and structured-output replies, on hand-made replies."""

import json

from harness.endpoints import probes


def test_judges_on_hand_made_replies():
    think = {
        "choices": [
            {
                "message": {
                    "content": "<think>\n</think>\n"
                    + json.dumps({"name": "Curie", "born": 1867, "field": "physics"})
                },
                "finish_reason": "stop",
            }
        ]
    }
    verdict = probes.judge_schema_reply(think)
    assert verdict["supported"] and verdict["think_block_removed"]
    wrong = {"choices": [{"message": {"content": json.dumps({"name": "Curie", "born": "1867"})}}]}
    detail = probes.judge_schema_reply(wrong)["detail"]
    assert "'field' is a required property" in detail and "'1867' is not of type 'integer'" in detail
    cut = {"choices": [{"message": {"content": "Let me"}, "finish_reason": "length"}]}
    assert "token budget ran out" in probes.judge_tool_reply(cut)["detail"]


def test_a_raw_reply_is_kept_whole_when_short_and_cut_at_4096_characters():
    from harness.endpoints.probes import RAW_LIMIT, raw_excerpt

    assert raw_excerpt(b'{"error": "no"}') == '{"error": "no"}'
    long = raw_excerpt("x" * 10_000)
    assert long.startswith("x" * RAW_LIMIT) and long.endswith("... (5,904 more characters cut)")
    assert raw_excerpt(b"\xff ok") == "\ufffd ok"  # bytes that are not UTF-8 are shown, not lost


def test_replies_of_the_wrong_shape_are_verdicts_never_exceptions():
    """Round two, second sweep: "choices" as an object (AttributeError), a message, delta or tool call
    of the wrong type: each judged unsupported with a reason."""
    from harness.endpoints import probes

    shapes = [
        {"choices": {"0": {"message": {"content": "hi"}}}},
        {"choices": ["text"]},
        {"choices": [{"message": "text", "finish_reason": 3}]},
        {"choices": [{"message": {"tool_calls": {"function": "x"}, "content": 5}}]},
        {"choices": [{"message": {"tool_calls": ["x", None]}}]},
        [],
    ]
    for reply in shapes:
        for judge in (probes.judge_tool_reply, probes.judge_schema_reply):
            verdict = judge(reply)
            assert verdict["supported"] is False and verdict["detail"], (reply, verdict)
    events = [{"choices": {"0": {"delta": {"content": "x"}}}}, {"choices": [None, {"delta": []}]}, "x"]
    assert probes.assemble_tool_deltas(events) == (None, "", "", None)
