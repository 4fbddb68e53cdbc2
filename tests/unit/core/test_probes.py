"""The probe's judges of tool-call and structured-output replies, on hand-made replies."""

import json

from harness.core import probes


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
