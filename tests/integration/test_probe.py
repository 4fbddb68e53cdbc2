"""`harness probe` against the practice server, including the two 'engine without support' findings."""

import pytest

from harness.cli import main
from harness.records.notebook import read_records
from tests.conftest import kit_profile

pytestmark = pytest.mark.slow


def run_probe(server, book, capsys):
    assert (
        main(
            [
                "probe",
                "--engine",
                "practice",
                "--base-url",
                server.base_url,
                "--model",
                "local-chat",
                "--labbook",
                str(book),
            ]
        )
        == 0
    )
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
    rec, _ = run_probe(
        practice(kit_profile(name="noparser", features={"tool_parser": False})), tmp_path / "b.md", capsys
    )
    for section in ("tool_calling", "streaming_tool_calling"):
        assert not rec[section]["supported"]
        assert rec[section]["detail"].startswith("the model wrote a <tool_call> block as text")
    # The failed probes keep what the server sent, not only the summary.
    assert (
        "<tool_call>" in rec["tool_calling"]["raw_reply"] and '"choices"' in rec["tool_calling"]["raw_reply"]
    )
    assert rec["streaming_tool_calling"]["raw_reply"].startswith("data: {")
    assert rec["structured_output"]["supported"] and "raw_reply" not in rec["structured_output"]


def test_prose_instead_of_json_is_reported(practice, tmp_path, capsys):
    rec, _ = run_probe(
        practice(kit_profile(name="noschema", features={"json_schema": False})), tmp_path / "b.md", capsys
    )
    assert not rec["structured_output"]["supported"]
    assert rec["structured_output"]["detail"].startswith("the request was accepted but the reply is not JSON")
