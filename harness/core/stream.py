"""Parse an OpenAI-style SSE chat stream: a pure function of the lines and their arrival times.

Definitions (docs/architecture.md): the first token is the first delta carrying text in ``content``,
``reasoning_content`` or ``reasoning``, or a ``tool_calls`` delta; output tokens come from
``usage.completion_tokens`` when the server sends it, else one text delta counts as one token
(``token_source`` says which); cached tokens come from ``usage.prompt_tokens_details
.cached_tokens``, else llama.cpp's ``timings.cache_n``. A stream that ends without a finish
reason and ``[DONE]`` is incomplete, never a success.

The stream ends at ``[DONE]``: whatever a server sends after it is not part of the answer (readers
stop there, and the parser drops it). A ``usage`` count is taken only when it is plausible against
the text deltas counted (``usage_disagreement``); one that is not is kept out of every rate and
the sample says so (``token_source`` ``usage-rejected``, the count from the deltas).
"""

from __future__ import annotations

import json
from typing import Any

from harness.core.sample import Sample
from harness.core.server_text import safe_text
from harness.core.tool_calls import join_tool_deltas

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

TEXT_FIELDS = ("content", "reasoning_content", "reasoning")
MAX_KEPT_TEXT = 1 << 20  # characters of an answer's content a sample keeps (the rest is counted)


class StreamParser:
    """Feed it each SSE line with its arrival time, then call ``finish``.

    Events follow the SSE rules: consecutive ``data:`` lines are one event, joined by newlines and
    ended by a blank line; a ``data:`` line that is a whole JSON object (or ``[DONE]``) on its own is
    taken at once, for the servers that send no blank lines. An ``error:`` line (llama-server's
    way of failing mid-stream) keeps the server's message. Nothing a server sends raises here."""

    def __init__(self, t_send: float, text_limit: int = MAX_KEPT_TEXT) -> None:
        self.s = Sample(t_send=t_send)
        self._text_limit = text_limit  # characters of ``content`` kept in the sample's text
        self._text: list[str] = []  # those characters' pieces, joined once at the end (linear)
        self._text_chars = 0
        self._deltas = 0
        self._usage: dict | None = None
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

    def _event(self, obj: Any, t: float) -> None:
        if not isinstance(obj, dict):
            return
        if self.s.request_id is None and isinstance(obj.get("id"), str):
            self.s.request_id = safe_text(obj["id"], 200)
        if "error" in obj and self.s.error is None:
            self.s.error = f"StreamError: {error_message(obj)}"
        if isinstance(obj.get("usage"), dict):
            self._usage = obj["usage"]
        if isinstance(obj.get("timings"), dict):
            self.s.timings = _numbers(obj["timings"])
        choices = obj.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if isinstance(choice, dict):
                self._choice(choice, t)

    def _keep(self, value: str) -> None:
        """Keep a content piece within the text limit; count what is past it (``text_cut``)."""
        room = max(self._text_limit - self._text_chars, 0)
        if len(value) > room:
            self.s.text_cut += len(value) - room
            value = value[:room]
        if value:
            self._text.append(value)
            self._text_chars += len(value)

    def _choice(self, choice: dict, t: float) -> None:
        delta = choice.get("delta")
        value = delta.get("content") if isinstance(delta, dict) and len(delta) == 1 else None
        if isinstance(value, str) and value and self._text_chars + len(value) <= self._text_limit:
            # the common delta, one piece of content within the kept text: ``choice``'s steps, in one
            s = self.s
            if "content" not in s.fields:
                s.fields.append("content")
            self._text.append(value)
            self._text_chars += len(value)
            self._deltas += 1
            s.token_times.append(t)
            if s.t_first is None:
                s.t_first = t
            if isinstance(choice.get("finish_reason"), str) and choice["finish_reason"]:
                s.finish_reason = choice["finish_reason"]
            return
        self.choice(choice, t)

    def choice(self, choice: dict, t: float) -> None:
        """One choice of an event, every case (``_choice`` takes a lone content piece faster)."""
        delta = choice.get("delta")
        delta = delta if isinstance(delta, dict) else {}
        carried = False
        for name in TEXT_FIELDS:
            value = delta.get(name)
            if isinstance(value, str) and value:
                carried = True
                if name not in self.s.fields:
                    self.s.fields.append(name)
                if name == "content":
                    self._keep(value)
        if not delta and self._completion_text(choice):
            carried = True
        if delta.get("tool_calls"):
            carried = True
            if "tool_calls" not in self.s.fields:
                self.s.fields.append("tool_calls")
            if isinstance(delta["tool_calls"], list):
                self.s.tool_calls_dropped += join_tool_deltas(self.s.tool_calls, delta["tool_calls"])
        if carried:
            self._deltas += 1
            self.s.token_times.append(t)
            if self.s.t_first is None:
                self.s.t_first = t
        if isinstance(choice.get("finish_reason"), str) and choice["finish_reason"]:
            self.s.finish_reason = choice["finish_reason"]

    def _completion_text(self, choice: dict) -> bool:
        """A text completion (/v1/completions) carries its piece in ``text``, not in a delta."""
        text = choice.get("text")
        if not isinstance(text, str) or not text:
            return False
        if "text" not in self.s.fields:
            self.s.fields.append("text")
        self._keep(text)
        return True

    def finish(self, t_end: float, error: str | None = None) -> Sample:
        s = self.s
        s.t_end = t_end
        if error and s.error is None:
            s.error = error
        self._flush(t_end)
        usage = self._usage or {}
        claimed = usage.get("completion_tokens")
        whole = isinstance(claimed, int) and not isinstance(claimed, bool)
        s.usage_note = None
        if isinstance(claimed, int) and whole:
            s.usage_note = usage_disagreement(claimed, self._deltas)
        elif claimed is not None:  # 3.5, 1e308, "4", true: no count, and said so
            s.usage_note = f"usage.completion_tokens {safe_text(repr(claimed), 40)} is not a token count"
        if whole and s.usage_note is None:
            s.output_tokens, s.token_source = claimed, "usage"
        else:
            s.output_tokens = self._deltas
            s.token_source = "usage-rejected" if s.usage_note else "deltas"
        s.prompt_tokens = usage.get("prompt_tokens") if _count(usage.get("prompt_tokens")) else None
        s.cached_tokens = _cached_count(usage, s.timings, s.prompt_tokens)
        if s.cached_tokens is None:
            s.cached_note = _cached_note(usage, s.timings, s.prompt_tokens)
        if s.error is None and s.saw_done and s.t_first is None:
            s.error = "NoText: the stream ended ([DONE]) before any text delta"
        if s.error is None and not (s.finish_reason and s.saw_done):
            missing = "a finish reason" if not s.finish_reason else "[DONE]"
            s.error = f"IncompleteStream: the stream ended without {missing}"
        if s.error is None and s.t_first is None:
            s.error = "NoText: the stream carried no text delta"
        s.ok = s.error is None
        if s.error is not None:  # whatever the server put in it: printable, encodable, no secret
            s.error = safe_text(s.error, 400)
        if s.finish_reason is not None:
            s.finish_reason = safe_text(s.finish_reason, 60)
        s.text = "".join(self._text).encode("utf-8", errors="replace").decode("utf-8")  # no lone surrogate
        return s


def _cached_count(usage: dict, timings: dict | None, prompt: int | None) -> int | None:
    """The cached prompt tokens the server reports (usage's details, else llama.cpp's ``cache_n``),
    or None: no count, or more cached tokens than the prompt it counted (no share past 1; the
    sample's ``cached_note`` says so)."""
    details = usage.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    cached = None
    if _count(details.get("cached_tokens")):
        cached = details["cached_tokens"]
    elif timings and _count(timings.get("cache_n")):
        cached = timings["cache_n"]
    return None if cached is not None and prompt is not None and cached > prompt else cached


def _cached_note(usage: dict, timings: dict | None, prompt: int | None) -> str | None:
    """Why a cached count the server sent was not taken: more than its prompt, or no count at all
    (negative, a fraction, a string, NaN); None when it sent none."""
    said = _cached_count(usage, timings, None)
    if said is not None:
        return f"the server said {said} cached tokens of a {prompt}-token prompt: no count"
    details = usage.get("prompt_tokens_details")
    raw = details.get("cached_tokens") if isinstance(details, dict) else None
    return None if raw is None else f"the server said cached_tokens {safe_text(repr(raw), 40)}: no count"


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


def _numbers(obj: dict) -> dict:
    """The finite numbers of a server's ``timings`` object (no integer past 1e15, no NaN): what is
    kept of it, so a sample always travels (msgpack) and writes (JSON) whole."""
    return {
        safe_text(k, 60): v
        for k, v in obj.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1e15 and v == v
    }


MAX_COUNT = 10**9  # more tokens than this in one request is no count (and never a float overflow)


def _count(value: Any) -> bool:
    """A token count a server may truly send: a whole number from 0 to ``MAX_COUNT`` (bool is not
    one; an integer of hundreds of digits is not either)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


USAGE_SLACK = 4096  # usage may exceed the deltas (several tokens per delta, hidden reasoning) by this
USAGE_FACTOR = 64  # ... or by this factor, whichever is larger


def usage_disagreement(claimed: int, deltas: int) -> str | None:
    """Why a ``usage.completion_tokens`` count cannot be the answer's, or None when it can.

    Every text delta carries at least one token, so a count under half the deltas is wrong; a
    server may pack several tokens into a delta or count reasoning it does not send, so a count
    above the deltas is taken up to ``USAGE_FACTOR`` times them or ``USAGE_SLACK`` more, whichever is
    larger. With no delta at all there is nothing to check against but the range."""
    if not 0 <= claimed <= MAX_COUNT:
        shown = str(claimed) if abs(claimed) < 10**12 else f"an integer of {len(str(abs(claimed)))} digits"
        return f"usage.completion_tokens {shown} is not a token count"
    if deltas == 0:
        return None
    if 2 * claimed < deltas:
        return f"usage.completion_tokens {claimed} is under half the {deltas} text deltas counted"
    if claimed > max(USAGE_FACTOR * deltas, deltas + USAGE_SLACK):
        return f"usage.completion_tokens {claimed} is far above the {deltas} text deltas counted"
    return None


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
