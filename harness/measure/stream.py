"""Read an OpenAI-style server-sent event stream: a pure function of the lines and their arrival
times. This module knows the SSE framing only (``data:`` lines, events, ``[DONE]``, ``error:``
lines); what an event carries is read by the endpoint kind's answer parser
(``harness.endpoints``), which the ``StreamParser`` hands each decoded event.

The stream ends at ``[DONE]``: whatever a server sends after it is not part of the answer (readers
stop there, and the parser drops it).
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from harness.measure.sample import Sample
from harness.safe_text import safe_text

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it
MAX_KEPT_TEXT = 1 << 20  # characters of an answer's content a sample keeps (the rest is counted)


class AnswerParser(Protocol):
    """What an endpoint kind reads of its answer into ``sample`` (``harness.endpoints``)."""

    sample: Sample

    def feed_event(self, obj: Any, t: float) -> None: ...

    def feed_body(self, body: bytes, t: float) -> None: ...

    def finish(self, t_end: float, error: str | None = None) -> Sample: ...


class StreamParser:
    """Feed it each SSE line with its arrival time, then call ``finish``.

    Events follow the SSE rules: consecutive ``data:`` lines are one event, joined by newlines and
    ended by a blank line; a ``data:`` line that is a whole JSON object (or ``[DONE]``) on its own is
    taken at once, for the servers that send no blank lines. An ``error:`` line (llama-server's
    way of failing mid-stream) keeps the server's message. Nothing a server sends raises here.
    An answer that is not streamed goes whole to ``feed_body``."""

    def __init__(self, answer: AnswerParser) -> None:
        self.answer = answer
        self.s = answer.sample
        self._event = answer.feed_event
        self._pending: list[bytes] = []  # data lines of an event not yet ended

    def feed(self, line: bytes | str, t: float) -> None:
        """One line (its ending kept or not). The hot path of every client: the two lines of a
        common event, ``data: {...}`` and the blank line after it, are taken with one test each
        when no event is half read; anything else (and a JSON event that does not parse as it is)
        goes the general way, ``line``, which gives the same result for these too."""
        if self.s.saw_done:  # the stream's true end: nothing after [DONE] is part of the answer
            return
        if not self._pending and line.__class__ is bytes:
            if line.startswith(b"data: {"):  # a whole JSON event: what ``line`` makes of it
                obj = _json_object(line[6:])
                if obj is not _BAD:
                    self._event(obj, t)
                    return
            elif line == b"\n" or line == b"\r\n" or not line:  # a separator with nothing to end
                return
        self.line(line, t)

    # Complexity allowed: the general path, one flat state machine.
    def line(self, line: bytes | str, t: float) -> None:  # noqa: C901
        """One line by the SSE rules, every case (``feed`` takes the common ones faster)."""
        if self.s.saw_done:  # the stream's true end: nothing after [DONE] is part of the answer
            return
        if isinstance(line, str):
            line = line.encode("utf-8", errors="replace")
        if not line.startswith(b"data:"):
            line = line.strip()
            if not line:
                self._flush(t)
                return
            if line.startswith(b"error:"):
                self._server_error(line[6:].strip())
                return
            if not line.startswith(b"data:"):
                return
        data = line[5:].strip()
        if self._pending:
            self._pending.append(data)
            joined = b"\n".join(self._pending)
            obj = _json(joined)
            if obj is not _BAD:
                self._pending = []
                self._event(obj, t)
                return
            alone = _json(data) if data != b"[DONE]" else _BAD
            if alone is _BAD and data != b"[DONE]":
                return
            self._pending.pop()  # no blank line after a broken event: that one is lost, not this
            self._flush(t)
            if data == b"[DONE]":
                self.s.saw_done = True
            else:
                self._event(alone, t)
            return
        if data == b"[DONE]":
            self.s.saw_done = True
            return
        obj = _json(data)
        if obj is _BAD:
            self._pending = [data]  # maybe the first line of a multi-line event
            return
        self._event(obj, t)

    def _flush(self, t: float) -> None:
        """A blank line ends the event: data lines that never made JSON are malformed SSE."""
        if not self._pending:
            return
        data, self._pending = b"\n".join(self._pending), []
        if data == b"[DONE]":
            self.s.saw_done = True
        elif self.s.error is None:
            self.s.error = f"MalformedSSE: {safe_text(data[:80], 100)!r}"

    def _server_error(self, data: bytes) -> None:
        if self.s.error is None:
            obj = _json(data)
            self.s.error = "StreamError: " + (
                error_message(obj) if obj is not _BAD else safe_text(data[:200])
            )

    def feed_body(self, body: bytes, t: float) -> None:
        """The whole answer of a kind that is not streamed, at its arrival time."""
        self.answer.feed_body(body, t)

    def finish(self, t_end: float, error: str | None = None) -> Sample:
        """The sample: an event left half read is malformed SSE, unless the request already failed."""
        if error and self.s.error is None:
            self.s.error = error
        self._flush(t_end)
        return self.answer.finish(t_end)


_BAD = object()


_DECODE = json.JSONDecoder().decode


def _json(data: bytes) -> Any:
    try:
        return _DECODE(data.decode())  # an event stream is UTF-8: no encoding to detect
    except ValueError:  # JSONDecodeError, or bytes that are not UTF-8
        return _BAD
    except RecursionError:  # absurdly nested garbage
        return _BAD


# the C scanner that ``_DECODE`` calls, without its wrapping (an attribute typeshed does not list)
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _json_object(data: bytes) -> Any:
    """``_json`` of bytes that begin with ``{``: the same value or ``_BAD`` (no leading whitespace to
    skip; after the value only JSON's own whitespace may follow), one call fewer per event."""
    try:
        text = data.decode()
        obj, end = _SCAN(text, 0)
    except (StopIteration, ValueError, RecursionError):  # not JSON, not UTF-8, absurdly nested
        return _BAD
    if end != len(text) and text[end:].strip(" \t\n\r"):
        return _BAD  # extra data after the object
    return obj


def error_message(obj: Any) -> str:
    """The server's own words from an error object: OpenAI's and vLLM's ``{"error": {"message"}}``,
    TGI's ``{"error": "..."}``, llama-server's ``{"code", "message"}``, FastAPI's ``{"detail"}``."""
    return safe_text(_message(obj))


def _message(obj: Any) -> str:
    if isinstance(obj, dict):
        err = obj.get("error", obj)
        if isinstance(err, dict):
            for key in ("message", "detail", "msg"):
                if err.get(key):
                    return str(err[key])[:1000]
            return _dumps(err)
        if err is not None and err is not obj:
            return str(err)[:1000]
        if obj.get("detail"):
            return str(obj["detail"])[:1000]
    return _dumps(obj) if obj is not _BAD else "(no message)"


def _dumps(obj: Any) -> str:
    try:
        return json.dumps(obj, ensure_ascii=False)[:1000]
    except (ValueError, TypeError, RecursionError):
        return "(no message)"


def whole_body_error(content_type: str, body: bytes) -> str:
    """Why a 200 answer that is not an event stream cannot be measured, in the server's words
    where it sent some: a JSON error body, a non-streamed answer, or something else."""
    obj = _json(body)
    if isinstance(obj, dict) and "error" in obj:
        return f"ServerError: {error_message(obj)}"
    if isinstance(obj, dict) and isinstance(obj.get("choices"), list):
        return (
            "NotStreamed: the server answered 200 with one whole JSON answer instead of an event "
            "stream (it ignored stream: true); its timing cannot be measured"
        )
    head = safe_text(body[:120], 120)
    kind = safe_text(content_type, 80) or "(none)"
    return f"NotAStream: 200 with Content-Type {kind} instead of text/event-stream: {head!r}"


def json_value(data: bytes) -> Any:
    """The JSON value of a whole body, or None when it is not JSON (or not UTF-8)."""
    obj = _json(data)
    return None if obj is _BAD else obj
