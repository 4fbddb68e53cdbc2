"""Chat completions not streamed (``/chat/completions``, ``stream: false``): the answer comes whole,
as one JSON object, so there is no first token to time. The sample keeps the end-to-end time, the
text (``choices[0].message``: ``content``, ``reasoning_content`` or ``reasoning``, ``tool_calls``),
the finish reason and the usage; its TTFT, TPOT and token gaps are absent, with the reason."""

from __future__ import annotations

from harness.safe_text import safe_text
from harness.measure.stream import MAX_KEPT_TEXT, StreamParser, error_message, json_value
from harness.endpoints.tool_calls import join_tool_deltas
from harness.workloads.request import Request
from harness.endpoints.base import BodySettings, TokenCounting, chat_fields
from harness.endpoints.wire import ANSWER, REQUEST

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

TEXT_FIELDS = (ANSWER.content, ANSWER.reasoning_content, ANSWER.reasoning)
NOT_STREAMED = "not streamed: the answer arrives whole, so it has no first token to time"


class WholeChatAnswer(TokenCounting):
    """A whole chat answer: its ``message`` read at the body's arrival; no first token."""

    streamed = False

    def __init__(self, t_send: float, text_limit: int = MAX_KEPT_TEXT) -> None:
        super().__init__(t_send, text_limit)
        self.sample.ttft_absent = NOT_STREAMED

    def feed_body(self, body: bytes, t: float) -> None:
        obj = json_value(body)
        problem = whole_problem(obj, body)
        if problem is None:
            self.feed_event(obj, t)
        elif self.sample.error is None:
            self.sample.error = problem

    def _choice(self, choice: dict, t: float) -> None:
        message = choice.get(ANSWER.message)
        message = message if isinstance(message, dict) else {}
        for name in TEXT_FIELDS:
            value = message.get(name)
            if isinstance(value, str) and value:
                self._field(name)
                if name == ANSWER.content:
                    self._keep(value)
        calls = message.get(ANSWER.tool_calls)
        if isinstance(calls, list) and calls:
            self._field(ANSWER.tool_calls)
            self.sample.tool_calls_dropped += join_tool_deltas(self.sample.tool_calls, calls)
        self._finish_reason(choice)

    def _count_tokens(self) -> None:
        """The usage's count; without one the answer's tokens are not known (None, and said so)."""
        super()._count_tokens()
        s = self.sample
        if s.token_source == "deltas":
            s.output_tokens, s.token_source = None, None
            s.usage_note = "the whole answer carried no usage: its output tokens are not known"


def whole_problem(obj: object, body: bytes) -> str | None:
    """Why a body is no whole chat answer to read (an error, an event stream, not JSON), or None."""
    if isinstance(obj, dict) and ANSWER.error in obj:
        return f"ServerError: {error_message(obj)}"
    if isinstance(obj, dict):
        return None
    if body.lstrip().startswith(b"data:"):
        return "Streamed: an event stream came where a whole answer was asked for (stream: false)"
    return f"NotJSON: the answer is no JSON object: {safe_text(body[:120], 120)!r}"


class ChatNoStream:
    """The chat kind without streaming: end-to-end time only."""

    name = "chat-nostream"
    path = "/chat/completions"
    streamed = False

    def body(self, job: Request, settings: BodySettings) -> dict:
        return {**chat_fields(job, settings), REQUEST.stream: False}

    def parser(self, t_send: float, text_limit: int = MAX_KEPT_TEXT) -> StreamParser:
        return StreamParser(WholeChatAnswer(t_send, text_limit))


KIND = ChatNoStream()
