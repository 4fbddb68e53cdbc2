"""Streamed text completions (``/completions``, ``stream: true``): a ``prompt`` instead of
``messages``, and each event's piece of the answer in ``choices[].text``. The prompt is the job's
messages without a chat template: a single message's text as it is, a conversation's messages'
texts joined by blank lines. The first token is the first event carrying text."""

from __future__ import annotations

from harness.measure.stream import MAX_KEPT_TEXT, StreamParser
from harness.workloads.request import Request
from harness.endpoints.base import BodySettings, TokenCounting, chat_fields
from harness.endpoints.chat import stream_fields
from harness.endpoints.wire import ANSWER, MESSAGE, REQUEST

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

CHAT_ONLY = (
    REQUEST.messages,
    REQUEST.tools,
    REQUEST.tool_choice,
    REQUEST.response_format,
    REQUEST.chat_template_kwargs,
)


def prompt_text(messages: list[dict]) -> str:
    """The messages' texts (a content string, or its parts' ``text``), joined by blank lines."""
    texts = []
    for message in messages:
        content = message.get(MESSAGE.content)
        if isinstance(content, list):
            content = "".join(str(p.get(MESSAGE.text, "")) for p in content if isinstance(p, dict))
        if isinstance(content, str) and content:
            texts.append(content)
    return "\n\n".join(texts)


class CompletionsAnswer(TokenCounting):
    """The choices of a text completion stream's events: a ``text`` piece each."""

    def _choice(self, choice: dict, t: float) -> None:
        text = choice.get(ANSWER.text)
        if isinstance(text, str) and text:
            self._field(ANSWER.text)
            self._keep(text)
            self._token(t)
        self._finish_reason(choice)


class Completions:
    """The streamed text completions kind: the body asks for a stream with its usage."""

    name = "completions"
    path = "/completions"
    streamed = True

    def body(self, job: Request, settings: BodySettings) -> dict:
        fields = chat_fields(job, settings)
        body = {REQUEST.prompt: prompt_text(job.messages)}
        body.update((k, v) for k, v in fields.items() if k not in CHAT_ONLY)
        return stream_fields(body)

    def parser(self, t_send: float, text_limit: int = MAX_KEPT_TEXT) -> StreamParser:
        return StreamParser(CompletionsAnswer(t_send, text_limit))


KIND = Completions()
