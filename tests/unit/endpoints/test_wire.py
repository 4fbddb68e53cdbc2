"""The wire format's keys are declared once (harness/endpoints/wire.py): a key reads back as its
own spelling, a misspelt one fails where it is used, and the bodies the kinds build use them."""

from __future__ import annotations

import pytest

from harness.endpoints import BodySettings, kind_named
from harness.endpoints.wire import ANSWER, MESSAGE, REQUEST
from harness.workloads.request import Request


def test_a_key_is_its_own_spelling() -> None:
    assert (REQUEST.max_tokens, ANSWER.finish_reason, MESSAGE.content) == (
        "max_tokens",
        "finish_reason",
        "content",
    )


def test_a_misspelt_key_fails_where_it_is_used() -> None:
    with pytest.raises(AttributeError, match="no wire key 'max_token'"):
        REQUEST.max_token  # noqa: B018


@pytest.mark.parametrize("kind", ["chat", "completions", "chat-nostream"])
def test_every_key_a_body_carries_is_declared(kind: str) -> None:
    job = Request(messages=[{"role": "user", "content": "hi"}], max_tokens=8, force_length=True)
    body = kind_named(kind).body(job, BodySettings(model="m", max_tokens=4, temperature=0.0))
    assert set(body) <= set(REQUEST), sorted(set(body) - set(REQUEST))
    for message in body.get(REQUEST.messages, []):
        assert set(message) <= set(MESSAGE)
