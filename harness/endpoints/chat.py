"""Streamed chat completions (``/chat/completions``, ``stream: true``): the kind every run used
before there were others. The first token is the first delta carrying text in ``content``,
``reasoning_content`` or ``reasoning``, or a ``tool_calls`` delta; tool-call pieces are joined by
``harness.endpoints.tool_calls``. A completions-style ``text`` piece in a chat stream is read too."""

from __future__ import annotations

from harness.measure.stream import MAX_KEPT_TEXT, StreamParser
from harness.endpoints.tool_calls import join_tool_deltas
from harness.workloads.request import Request
from harness.endpoints.base import BodySettings, TokenCounting, chat_fields
from harness.endpoints.wire import ANSWER, REQUEST

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

TEXT_FIELDS = (ANSWER.content, ANSWER.reasoning_content, ANSWER.reasoning)
CONTENT, DELTA, FINISH_REASON = ANSWER.content, ANSWER.delta, ANSWER.finish_reason  # the hot path's


class ChatAnswer(TokenCounting):
    """The choices of a chat stream's events: ``delta`` pieces of text and tool calls."""

    def _choice(self, choice: dict, t: float) -> None:
        delta = choice.get(DELTA)
        value = delta.get(CONTENT) if isinstance(delta, dict) and len(delta) == 1 else None
        if isinstance(value, str) and value and self._text_chars + len(value) <= self._text_limit:
            # the common delta, one piece of content within the kept text: ``choice``'s steps, in one
            s = self.sample
            if CONTENT not in s.fields:
                s.fields.append(CONTENT)
            self._text.append(value)
            self._text_chars += len(value)
            self._deltas += 1
            s.token_times.append(t)
            if s.t_first is None:
                s.t_first = t
            if isinstance(choice.get(FINISH_REASON), str) and choice[FINISH_REASON]:
                s.finish_reason = choice[FINISH_REASON]
            return
        self.choice(choice, t)

    def choice(self, choice: dict, t: float) -> None:
        """One choice of an event, every case (``_choice`` takes a lone content piece faster)."""
        delta = choice.get(DELTA)
        delta = delta if isinstance(delta, dict) else {}
        carried = False
        for name in TEXT_FIELDS:
            value = delta.get(name)
            if isinstance(value, str) and value:
                carried = True
                self._field(name)
                if name == CONTENT:
                    self._keep(value)
        if not delta and self._completion_text(choice):
            carried = True
        if delta.get(ANSWER.tool_calls):
            carried = True
            self._field(ANSWER.tool_calls)
            if isinstance(delta[ANSWER.tool_calls], list):
                self.sample.tool_calls_dropped += join_tool_deltas(
                    self.sample.tool_calls, delta[ANSWER.tool_calls]
                )
        if carried:
            self._token(t)
        self._finish_reason(choice)

    def _completion_text(self, choice: dict) -> bool:
        """A text completion's piece (``text``, not a delta), as some servers send in chat too."""
        text = choice.get(ANSWER.text)
        if not isinstance(text, str) or not text:
            return False
        self._field(ANSWER.text)
        self._keep(text)
        return True


class Chat:
    """The streamed chat kind: the body asks for a stream with a usage chunk at its end."""

    name = "chat"
    path = "/chat/completions"
    streamed = True

    def body(self, job: Request, settings: BodySettings) -> dict:
        return stream_fields(chat_fields(job, settings))

    def parser(self, t_send: float, text_limit: int = MAX_KEPT_TEXT) -> StreamParser:
        return StreamParser(ChatAnswer(t_send, text_limit))


def stream_fields(body: dict) -> dict:
    """``body`` asking for a stream whose last chunk carries the usage."""
    return {**body, REQUEST.stream: True, REQUEST.stream_options: {REQUEST.include_usage: True}}


KIND = Chat()


def chat_parser(t_send: float, text_limit: int = MAX_KEPT_TEXT) -> StreamParser:
    """A parser of one streamed chat answer (what the load, the proof and the tests read with)."""
    return KIND.parser(t_send, text_limit)
