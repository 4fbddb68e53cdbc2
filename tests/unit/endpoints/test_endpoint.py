"""The endpoint proof's verdict on what it saw (pure)."""

from __future__ import annotations

import pytest

from harness.endpoints.proof import estimate_tokens, verdict
from harness.errors import TargetError

GOOD = {
    "ok": True,
    "error": None,
    "text_fields": ["reasoning_content", "content"],
    "finish_reason": "stop",
    "usage": True,
    "model_listed": True,
    "listed_models": ["local-chat"],
    "n_ctx": 4096,
}


def test_a_good_endpoint_passes_quietly():
    assert verdict(GOOD, 500, 128) == []


@pytest.mark.parametrize(
    "change, words",
    [
        (
            {"ok": False, "error": "HTTP 503: Loading model"},
            "the proof request failed (HTTP 503: Loading model)",
        ),
        ({"text_fields": []}, "returned no text in content, reasoning or tool calls"),
        ({"finish_reason": None}, "ended without a finish reason"),
        (
            {"n_ctx": 1024},
            "the server's context is 1024 tokens per sequence, and this prompt set needs about 1000 + 128",
        ),
    ],
)
def test_what_stops_a_sweep(change, words):
    with pytest.raises(TargetError) as err:
        verdict({**GOOD, **change}, 1000, 128)
    assert words in str(err.value)


def test_what_only_warns():
    found = verdict(
        {**GOOD, "model_listed": False, "listed_models": ["qwen3"], "usage": False, "n_ctx": None},
        10_000,
        128,
    )
    assert found == [
        "the server lists qwen3, not the model sent",
        "no usage block came back: output tokens will be counted from the stream's chunks",
    ]


def test_the_token_estimate():
    assert estimate_tokens("x" * 4000) == 1001


@pytest.mark.parametrize(
    "error",
    [
        "HTTP 501: <!DOCTYPE HTML><html lang='en'><head><title>Error response</title>",
        "HTTP 501: Unsupported method ('POST')",
        "HTTP 404: <html><body>Not Found</body></html>",
        "NotAStream: 200 with Content-Type text/html instead of text/event-stream: '<!doctype html>'",
    ],
)
def test_a_web_server_is_named_not_openai_compatible_without_its_html(error):
    with pytest.raises(TargetError) as info:
        verdict({**GOOD, "ok": False, "error": error}, 100, 128)
    text = str(info.value)
    assert text.startswith("not an OpenAI-compatible server: ") and "<" not in text


def test_an_api_error_is_not_mistaken_for_a_web_server():
    with pytest.raises(TargetError) as info:
        verdict({**GOOD, "ok": False, "error": "HTTP 404: model 'x' not found"}, 100, 128)
    assert "not an OpenAI-compatible" not in str(info.value) and "model 'x' not found" in str(info.value)
