"""Where a request's tokens go: an SSE stream (one event and one socket write per token) or one
whole JSON reply when the last token is due; both record the ground truth as they send. A chat
completion's pieces go in ``delta``s or a ``message``; a text completion's (``/v1/completions``)
in ``choices[].text``."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from harness.practice.engine import Sequence, clock
from harness.practice.faults import Faults
from harness.practice.http import Responder
from harness.practice.truth import Truth

if TYPE_CHECKING:
    from harness.practice.app import PracticeApp


_DELTAS: dict[tuple[str, str], bytes] = {}


def _delta_bytes(name: str, text: str) -> bytes:
    """The encoded ``"field":"text"`` part of a delta; the vocabulary is small, so it is cached."""
    key = (name, text)
    out = _DELTAS.get(key)
    if out is None:
        out = f'"{name}":{json.dumps(text)}'.encode()
        if len(_DELTAS) < 100_000:
            _DELTAS[key] = out
    return out


class _SinkBase:
    def __init__(
        self,
        app: PracticeApp,
        res: Responder,
        rid: str,
        model: str,
        truth: Truth,
        faults: Faults,
        include_usage: bool,
    ) -> None:
        self.app, self.res, self.rid, self.model = app, res, rid, model
        self.truth, self.faults, self.include_usage = truth, faults, include_usage
        self.created = int(time.time())

    @property
    def closed(self) -> bool:
        return self.res.closed

    def _record(self, seq: Sequence, scheduled: float) -> None:
        sent = clock()
        t = self.truth
        if t.admitted is None:
            t.admitted, t.seat, t.cached_tokens = seq.admitted_at, seq.seat, seq.cached
        t.scheduled.append(scheduled)
        t.sent.append(sent)
        self.app.lateness.append(sent - scheduled)


class StreamSink(_SinkBase):
    """Writes SSE chunks as tokens come due; each token is one event and one socket write."""

    OBJECT = "chat.completion.chunk"

    def final_choice(self, finish_reason: str) -> dict:
        return {"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish_reason}

    def _open(self, head: str, tail: bytes) -> None:
        """Start the stream; every event is ``head``, its piece, then ``tail``."""
        self._head, self._tail = head.encode(), tail
        imitation = self.app.imitation
        close = imitation is not None and imitation.persona.close_delimited
        self.res.start_stream(headers=[("X-Request-Id", self.rid)], close_delimited=close)
        self._write = self.res.raw_writer()
        self._chunked = not close

    def start_text(self) -> None:
        self._open(
            f'data: {{"id":"{self.rid}","object":"{self.OBJECT}","created":{self.created},'
            f'"model":{json.dumps(self.model)},"choices":[{{"index":0,',
            b',"logprobs":null,"finish_reason":null}]}\n\n',
        )

    def start(self) -> None:
        self._open(
            f'data: {{"id":"{self.rid}","object":"{self.OBJECT}","created":{self.created},'
            f'"model":{json.dumps(self.model)},"choices":[{{"index":0,"delta":{{',
            b'},"logprobs":null,"finish_reason":null}]}\n\n',
        )
        role = (
            '"role":"assistant","content":null'
            if self.app.mode == "llama"
            else '"role":"assistant","content":""'
        )
        self.res.chunk(self._head + role.encode() + self._tail)

    def token(self, seq: Sequence, index: int, scheduled: float) -> None:
        # The hot path (one call per token event): kept flat on purpose.
        res = self.res
        if res.closed:
            return
        pieces = seq.plan.pieces
        field_name, text = pieces[index]
        if field_name == "content":
            delta = _DELTAS.get(("content", text)) or _delta_bytes("content", text)
        elif field_name == "reasoning":
            delta = _delta_bytes(self.app.reasoning_field(), text)
        elif index == 0 or pieces[index - 1][0] != "tool_args":
            delta = (
                '"tool_calls":[{"index":0,"id":"call_'
                + self.rid[-12:]
                + '","type":"function","function":{"name":'
                + json.dumps(seq.plan.tool_name)
                + ',"arguments":'
                + json.dumps(text)
                + "}}]"
            ).encode()
        else:
            delta = b'"tool_calls":[{"index":0,"function":{"arguments":' + json.dumps(text).encode() + b"}}]"
        payload = self._head + delta + self._tail
        self._write(b"%x\r\n%s\r\n" % (len(payload), payload) if self._chunked else payload)
        sent = clock()
        truth = self.truth
        truth.scheduled.append(scheduled)
        truth.sent.append(sent)
        self.app.lateness.append(sent - scheduled)
        if truth.admitted is None:
            truth.admitted, truth.seat, truth.cached_tokens = seq.admitted_at, seq.seat, seq.cached
        faults = self.faults
        if faults.any:
            if faults.malformed and index == min(1, seq.length - 1):
                res.chunk(b'data: {"choices":[{"delta":{"content":"unterminated\n\n')
            if faults.cut_after is not None and seq.emitted >= faults.cut_after:
                truth.outcome = "cut"
                res.abort()

    def finish(self, seq: Sequence) -> None:
        if self.closed:
            return
        end = clock()
        t = self.truth
        t.finish_reason, t.outcome = seq.plan.finish_reason, "ok"
        final = {
            "id": self.rid,
            "object": self.OBJECT,
            "created": self.created,
            "model": self.model,
            "choices": [self.final_choice(seq.plan.finish_reason)],
        }
        # As llama-server does: timings ride the usage chunk when there is one, else the last chunk.
        llama_timings = self.app.mode == "llama" and not self.faults.no_usage
        with_usage = self.include_usage and not self.faults.no_usage
        if llama_timings and not with_usage:
            final["timings"] = self.app.timings(seq, end)
        out = b"data: " + json.dumps(final).encode() + b"\n\n"
        if with_usage:
            usage = {
                "id": self.rid,
                "object": self.OBJECT,
                "created": self.created,
                "model": self.model,
                "choices": [],
                "usage": self.app.usage(seq),
            }
            if llama_timings:
                usage["timings"] = self.app.timings(seq, end)
            out += b"data: " + json.dumps(usage).encode() + b"\n\n"
        out += b"data: [DONE]\n\n"
        self.res.chunk(out)
        self.res.end()


class WholeSink(_SinkBase):
    """Collects the reply and sends one JSON body when the last token is due."""

    OBJECT = "chat.completion"

    def choice(self, message: dict, finish_reason: str) -> dict:
        return {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}

    def start(self) -> None:
        pass

    def token(self, seq: Sequence, index: int, scheduled: float) -> None:
        self._record(seq, scheduled)
        if self.faults.cut_after is not None and seq.emitted >= self.faults.cut_after:
            self.truth.outcome = "cut"
            self.res.abort()

    def finish(self, seq: Sequence) -> None:
        if self.closed:
            return
        t = self.truth
        t.finish_reason, t.outcome = seq.plan.finish_reason, "ok"
        parts = {"reasoning": "", "content": "", "tool_args": ""}
        for field_name, text in seq.plan.pieces[: seq.emitted]:
            parts[field_name] += text
        message: dict = {"role": "assistant", "content": parts["content"] or None}
        if parts["reasoning"]:
            message[self.app.reasoning_field()] = parts["reasoning"]
        if seq.plan.tool_name and parts["tool_args"]:
            message["tool_calls"] = [
                {
                    "id": "call_" + self.rid[-12:],
                    "type": "function",
                    "function": {"name": seq.plan.tool_name, "arguments": parts["tool_args"]},
                }
            ]
        body = {
            "id": self.rid,
            "object": self.OBJECT,
            "created": self.created,
            "model": self.model,
            "choices": [self.choice(message, seq.plan.finish_reason)],
        }
        if not self.faults.no_usage:
            body["usage"] = self.app.usage(seq)
            if self.app.mode == "llama":
                body["timings"] = self.app.timings(seq, clock())
        self.res.send_json(200, body, headers=[("X-Request-Id", self.rid)])


class TextStreamSink(StreamSink):
    """A text completion's stream: every piece in ``choices[].text``, no role chunk first."""

    OBJECT = "text_completion"

    def final_choice(self, finish_reason: str) -> dict:
        return {"index": 0, "text": "", "logprobs": None, "finish_reason": finish_reason}

    def start(self) -> None:
        self.start_text()

    def token(self, seq: Sequence, index: int, scheduled: float) -> None:
        if not self.res.closed:
            text = seq.plan.pieces[index][1]
            payload = self._head + _delta_bytes("text", text) + self._tail
            self._write(b"%x\r\n%s\r\n" % (len(payload), payload) if self._chunked else payload)
        self._record(seq, scheduled)
        if self.faults.cut_after is not None and seq.emitted >= self.faults.cut_after:
            self.truth.outcome = "cut"
            self.res.abort()


class TextWholeSink(WholeSink):
    """A text completion's whole answer: the text in ``choices[0].text``."""

    OBJECT = "text_completion"

    def choice(self, message: dict, finish_reason: str) -> dict:
        text = message.get("content") or ""
        return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}
