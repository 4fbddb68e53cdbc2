"""`harness probe` against the practice server, including the two 'engine without support' findings."""

import json

import pytest

from harness.core import probes
from harness.cli import main
from harness.io.notebook import read_records
from tests.conftest import kit_profile

pytestmark = pytest.mark.slow


def run_probe(server, book, capsys):
    assert main(["probe", "--engine", "practice", "--base-url", server.base_url, "--model", "local-chat",
                 "--labbook", str(book)]) == 0
    out = capsys.readouterr().out
    recs = read_records(book, "features").records
    assert len(recs) == 1
    return recs[0], out


def test_everything_supported(practice, tmp_path, capsys):
    rec, out = run_probe(practice("kit"), tmp_path / "b.md", capsys)
    for section in ("models_endpoint", "tool_calling", "streaming_tool_calling", "structured_output"):
        assert rec[section]["supported"], rec[section]
    assert rec["tool_calling"]["called"] == "get_current_weather"
    assert isinstance(rec["tool_calling"]["arguments"]["city"], str)
    assert "tool calling, streamed" in out


def test_tool_call_written_as_text_is_a_server_finding(practice, tmp_path, capsys):
    rec, _ = run_probe(practice(kit_profile(name="noparser", features={"tool_parser": False})), tmp_path / "b.md",
                       capsys)
    for section in ("tool_calling", "streaming_tool_calling"):
        assert not rec[section]["supported"]
        assert rec[section]["detail"].startswith("the model wrote a <tool_call> block as text")
    assert rec["structured_output"]["supported"]


def test_prose_instead_of_json_is_reported(practice, tmp_path, capsys):
    rec, _ = run_probe(practice(kit_profile(name="noschema", features={"json_schema": False})), tmp_path / "b.md",
                       capsys)
    assert not rec["structured_output"]["supported"]
    assert rec["structured_output"]["detail"].startswith("the request was accepted but the reply is not JSON")


def test_server_down_is_one_line(tmp_path, capsys):
    assert main(["probe", "--engine", "x", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                 "--labbook", str(tmp_path / "b.md")]) == 2
    assert "nothing answers at" in capsys.readouterr().err
    assert not (tmp_path / "b.md").exists()


def test_judges_on_hand_made_replies():
    think = {"choices": [{"message": {"content": "<think>\n</think>\n" + json.dumps(
        {"name": "Curie", "born": 1867, "field": "physics"})}, "finish_reason": "stop"}]}
    verdict = probes.judge_schema_reply(think)
    assert verdict["supported"] and verdict["think_block_removed"]
    wrong = {"choices": [{"message": {"content": json.dumps({"name": "Curie", "born": "1867"})}}]}
    detail = probes.judge_schema_reply(wrong)["detail"]
    assert "'field' is a required property" in detail and "'1867' is not of type 'integer'" in detail
    cut = {"choices": [{"message": {"content": "Let me"}, "finish_reason": "length"}]}
    assert "token budget ran out" in probes.judge_tool_reply(cut)["detail"]
