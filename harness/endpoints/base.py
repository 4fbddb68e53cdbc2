"""What every endpoint kind shares: the sampling fields of a request body, and ``TokenCounting``,
which turns what an answer carries into a sample. Definitions (docs/architecture.md): output
tokens come from ``usage.completion_tokens`` when the server sends a plausible count, else one
text delta counts as one token (``token_source`` says which); cached tokens come from
``usage.prompt_tokens_details.cached_tokens``, else llama.cpp's ``timings.cache_n``. An answer
that ends without a finish reason (and, streamed, without ``[DONE]``) is incomplete, never a
success. A kind supplies only how its events or its whole body carry text (``_choice``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.measure.sample import Sample
from harness.safe_text import safe_text
from harness.measure.stream import MAX_KEPT_TEXT, error_message
from harness.workloads.request import Request, forced_fields
from harness.endpoints.wire import ANSWER, REQUEST

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


@dataclass(frozen=True)
class BodySettings:
    """The sampling fields every request of a run carries (``model`` None: the server's own)."""

    model: str | None = None
    max_tokens: int | None = None  # None: not sent (the server's own limit)
    temperature: float | None = None  # None: not sent


def chat_fields(job: Request, settings: BodySettings) -> dict:
    """A chat-shaped body without its streaming fields: ``messages``, the sampling fields, the
    job's extra fields and its forced length; each kind makes its own body from it."""
    body: dict = {REQUEST.messages: job.messages}
    if settings.max_tokens is not None:
        body[REQUEST.max_tokens] = settings.max_tokens
    if settings.temperature is not None:
        body[REQUEST.temperature] = settings.temperature
    body.update(job.extra)
    if job.max_tokens is not None:
        body.update(
            forced_fields(job.max_tokens) if job.force_length else {REQUEST.max_tokens: job.max_tokens}
        )
    if settings.model:
        body[REQUEST.model] = settings.model
    return body


class TokenCounting:
    """A sample built from an answer's events (streamed) or its whole body: the parts every kind
    reads alike (id, error objects, usage, timings, the kept text, the token count and the end);
    ``_choice`` is the kind's own."""

    streamed = True  # False: ``finish`` asks for no [DONE], and the answer has no first token

    def __init__(self, t_send: float, text_limit: int = MAX_KEPT_TEXT) -> None:
        self.sample = Sample(t_send=t_send)
        self._text_limit = text_limit  # characters of ``content`` kept in the sample's text
        self._text: list[str] = []  # those characters' pieces, joined once at the end (linear)
        self._text_chars = 0
        self._deltas = 0
        self._usage: dict | None = None

    def feed_event(self, obj: Any, t: float) -> None:
        """One decoded event of a stream (or the whole body of an answer that is not streamed)."""
        if not isinstance(obj, dict):
            return
        s = self.sample
        if s.request_id is None and isinstance(obj.get(ANSWER.id), str):
            s.request_id = safe_text(obj[ANSWER.id], 200)
        if ANSWER.error in obj and s.error is None:
            s.error = f"StreamError: {error_message(obj)}"
        if isinstance(obj.get(ANSWER.usage), dict):
            self._usage = obj[ANSWER.usage]
        if isinstance(obj.get(ANSWER.timings), dict):
            s.timings = _numbers(obj[ANSWER.timings])
        choices = obj.get(ANSWER.choices)
        for choice in choices if isinstance(choices, list) else []:
            if isinstance(choice, dict):
                self._choice(choice, t)

    def feed_body(self, body: bytes, t: float) -> None:
        """The whole answer of a kind that is not streamed; a streamed kind never gets one."""
        raise NotImplementedError(f"{type(self).__name__} reads a stream, not a whole body")

    def _choice(self, choice: dict, t: float) -> None:
        raise NotImplementedError

    def _field(self, name: str) -> None:
        if name not in self.sample.fields:
            self.sample.fields.append(name)

    def _keep(self, value: str) -> None:
        """Keep a content piece within the text limit; count what is past it (``text_cut``)."""
        room = max(self._text_limit - self._text_chars, 0)
        if len(value) > room:
            self.sample.text_cut += len(value) - room
            value = value[:room]
        if value:
            self._text.append(value)
            self._text_chars += len(value)

    def _token(self, t: float) -> None:
        """One delta that carried text or a tool call, arrived at ``t``."""
        self._deltas += 1
        self.sample.token_times.append(t)
        if self.sample.t_first is None:
            self.sample.t_first = t

    def _finish_reason(self, choice: dict) -> None:
        if isinstance(choice.get(ANSWER.finish_reason), str) and choice[ANSWER.finish_reason]:
            self.sample.finish_reason = choice[ANSWER.finish_reason]

    def finish(self, t_end: float, error: str | None = None) -> Sample:
        s = self.sample
        s.t_end = t_end
        if error and s.error is None:
            s.error = error
        self._count_tokens()
        self._judge()
        s.ok = s.error is None
        if s.error is not None:  # whatever the server put in it: printable, encodable, no secret
            s.error = safe_text(s.error, 400)
        if s.finish_reason is not None:
            s.finish_reason = safe_text(s.finish_reason, 60)
        s.text = "".join(self._text).encode("utf-8", errors="replace").decode("utf-8")  # no lone surrogate
        return s

    def _count_tokens(self) -> None:
        s = self.sample
        usage = self._usage or {}
        claimed = usage.get(ANSWER.completion_tokens)
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
        prompt = usage.get(ANSWER.prompt_tokens)
        s.prompt_tokens = prompt if _count(prompt) else None
        s.cached_tokens = _cached_count(usage, s.timings, s.prompt_tokens)
        if s.cached_tokens is None:
            s.cached_note = _cached_note(usage, s.timings, s.prompt_tokens)

    def _judge(self) -> None:
        """The error of an answer that ended without text, a finish reason or (streamed) [DONE]."""
        s = self.sample
        if not self.streamed:
            if s.error is None and not s.finish_reason:
                s.error = "IncompleteAnswer: the answer carried no finish reason"
            if s.error is None and not s.fields:
                s.error = "NoText: the answer carried no text"
            return
        if s.error is None and s.saw_done and s.t_first is None:
            s.error = "NoText: the stream ended ([DONE]) before any text delta"
        if s.error is None and not (s.finish_reason and s.saw_done):
            missing = "a finish reason" if not s.finish_reason else "[DONE]"
            s.error = f"IncompleteStream: the stream ended without {missing}"
        if s.error is None and s.t_first is None:
            s.error = "NoText: the stream carried no text delta"


def _cached_count(usage: dict, timings: dict | None, prompt: int | None) -> int | None:
    """The cached prompt tokens the server reports (usage's details, else llama.cpp's ``cache_n``),
    or None: no count, or more cached tokens than the prompt it counted (no share past 1; the
    sample's ``cached_note`` says so)."""
    details = usage.get(ANSWER.prompt_tokens_details)
    details = details if isinstance(details, dict) else {}
    cached = None
    if _count(details.get(ANSWER.cached_tokens)):
        cached = details[ANSWER.cached_tokens]
    elif timings and _count(timings.get(ANSWER.cache_n)):
        cached = timings[ANSWER.cache_n]
    return None if cached is not None and prompt is not None and cached > prompt else cached


def _cached_note(usage: dict, timings: dict | None, prompt: int | None) -> str | None:
    """Why a cached count the server sent was not taken: more than its prompt, or no count at all
    (negative, a fraction, a string, NaN); None when it sent none."""
    said = _cached_count(usage, timings, None)
    if said is not None:
        return f"the server said {said} cached tokens of a {prompt}-token prompt: no count"
    details = usage.get(ANSWER.prompt_tokens_details)
    raw = details.get(ANSWER.cached_tokens) if isinstance(details, dict) else None
    return None if raw is None else f"the server said cached_tokens {safe_text(repr(raw), 40)}: no count"


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
