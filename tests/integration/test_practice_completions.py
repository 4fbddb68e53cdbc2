"""The practice server's text completions route (``/v1/completions``): a ``prompt`` answered in
``choices[].text``, streamed as events of the ``text_completion`` object or whole; the prompt is
counted without a chat template, and a request without a prompt is refused as servers do."""

from __future__ import annotations

import json

import requests


def events(resp: requests.Response) -> list:
    lines = [line for line in resp.iter_lines() if line.startswith(b"data: ")]
    return [line[6:] if line == b"data: [DONE]" else json.loads(line[6:]) for line in lines]


def test_a_streamed_text_completion_carries_its_text_and_usage(practice):
    server = practice("llama")
    body = {"prompt": "Once upon a time", "max_tokens": 5, "stream": True}
    body["stream_options"] = {"include_usage": True}
    got = events(requests.post(server.base_url + "/completions", json=body, timeout=30, stream=True))
    assert got[-1] == b"[DONE]"
    pieces = [e["choices"][0]["text"] for e in got[:-1] if e["choices"] and e["choices"][0]["text"]]
    assert len(pieces) == 5 and all(e["object"] == "text_completion" for e in got[:-1])
    assert not any("delta" in c for e in got[:-1] for c in e["choices"])  # no chat delta, no role chunk
    assert [e["choices"][0]["finish_reason"] for e in got[:-1] if e["choices"]][-1] == "length"
    usage = got[-2]["usage"]
    assert usage["completion_tokens"] == 5
    # no template: the prompt's own tokens, fewer than the same words as a chat message
    chat = requests.post(
        server.base_url + "/chat/completions",
        json={"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 1},
        timeout=30,
    ).json()
    assert 0 < usage["prompt_tokens"] < chat["usage"]["prompt_tokens"]


def test_a_whole_text_completion_and_a_missing_prompt(practice):
    server = practice("kit")
    whole = requests.post(
        server.base_url + "/completions", json={"prompt": "hi", "max_tokens": 3}, timeout=30
    )
    answer = whole.json()
    assert whole.status_code == 200 and answer["object"] == "text_completion"
    (choice,) = answer["choices"]
    assert (
        choice["text"] and choice["finish_reason"] == "length" and answer["usage"]["completion_tokens"] == 3
    )
    refused = requests.post(server.base_url + "/completions", json={"messages": []}, timeout=30)
    assert refused.status_code == 400 and "'prompt' is required" in refused.text
    assert requests.get(server.base_url + "/completions", timeout=30).status_code == 405
