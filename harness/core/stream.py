"""Parse an OpenAI-style SSE chat stream: a pure function of the lines and their arrival times.

Definitions (docs/architecture.md): the first token is the first delta carrying text in ``content``,
``reasoning_content`` or ``reasoning``, or a ``tool_calls`` delta; output tokens come from
``usage.completion_tokens`` when the server sends it, else one text delta counts as one token
(``token_source`` says which); cached tokens come from ``usage.prompt_tokens_details
.cached_tokens``, else llama.cpp's ``timings.cache_n``. A stream that ends without a finish
reason and ``[DONE]`` is incomplete, never a success.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

TEXT_FIELDS = ("content", "reasoning_content", "reasoning")


@dataclass
class Sample:
    """What the client saw of one request. Times are seconds on one monotonic clock."""

    t_send: float
    ok: bool = False
    error: str | None = None
    t_first: float | None = None
    t_end: float | None = None
    token_times: list[float] = field(default_factory=list)  # arrival of every text/tool delta
    output_tokens: int | None = None
    token_source: str | None = None  # "usage" or "deltas"
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    finish_reason: str | None = None
    fields: list[str] = field(default_factory=list)
    saw_done: bool = False
    timings: dict | None = None
    text: str = ""
    request_id: str | None = None  # the completion id the server gave this response
    clock: str | None = None  # "kernel": arrival times are the kernel's receive stamps; "read": when read
    read_lags: list[float] = field(default_factory=list)  # per stamped token: how long it waited to be read

    @property
    def ttft(self) -> float | None:
        return None if self.t_first is None else self.t_first - self.t_send

    @property
    def tpot(self) -> float | None:
        """(end - first token) / (output tokens - 1), the vllm bench serve definition."""
        if self.t_first is None or self.t_end is None or not self.output_tokens or self.output_tokens < 2:
            return None
        return (self.t_end - self.t_first) / (self.output_tokens - 1)

    @property
    def itl(self) -> list[float]:
        t = self.token_times
        return [b - a for a, b in zip(t, t[1:], strict=False)]


class StreamParser:
    """Feed it each SSE line with its arrival time, then call ``finish``."""

    def __init__(self, t_send: float) -> None:
        self.s = Sample(t_send=t_send)
        self._deltas = 0
        self._usage: dict | None = None

    # Complexity allowed: the per-line hot path: one flat state machine, no calls per token.
    def feed(self, line: bytes | str, t: float) -> None:  # noqa: C901
        # The hot path of every client: blank separators and comments are dropped before any work.
        if isinstance(line, str):
            line = line.encode("utf-8", errors="replace")
        if not line.startswith(b"data:"):
            line = line.strip()
            if not line.startswith(b"data:"):
                return
        data = line[5:].strip()
        if data == b"[DONE]":
            self.s.saw_done = True
            return
        try:
            obj = json.loads(data)
        except ValueError:  # JSONDecodeError, or bytes that are not UTF-8
            if self.s.error is None:
                self.s.error = f"MalformedSSE: {data[:80].decode('utf-8', errors='replace')!r}"
            return
        if not isinstance(obj, dict):
            return
        if self.s.request_id is None and isinstance(obj.get("id"), str):
            self.s.request_id = obj["id"]
        if "error" in obj and self.s.error is None:
            err = obj["error"]
            self.s.error = f"StreamError: {err.get('message', err) if isinstance(err, dict) else err}"
        if isinstance(obj.get("usage"), dict):
            self._usage = obj["usage"]
        if isinstance(obj.get("timings"), dict):
            self.s.timings = obj["timings"]
        for choice in obj.get("choices") or []:
            delta = choice.get("delta") or {}
            carried = False
            for name in TEXT_FIELDS:
                value = delta.get(name)
                if isinstance(value, str) and value:
                    carried = True
                    if name not in self.s.fields:
                        self.s.fields.append(name)
                    if name == "content":
                        self.s.text += value
            if delta.get("tool_calls"):
                carried = True
                if "tool_calls" not in self.s.fields:
                    self.s.fields.append("tool_calls")
            if carried:
                self._deltas += 1
                self.s.token_times.append(t)
                if self.s.t_first is None:
                    self.s.t_first = t
            if choice.get("finish_reason"):
                self.s.finish_reason = choice["finish_reason"]

    def finish(self, t_end: float, error: str | None = None) -> Sample:
        s = self.s
        s.t_end = t_end
        if error and s.error is None:
            s.error = error
        usage = self._usage or {}
        if isinstance(usage.get("completion_tokens"), int):
            s.output_tokens, s.token_source = usage["completion_tokens"], "usage"
        else:
            s.output_tokens, s.token_source = self._deltas, "deltas"
        s.prompt_tokens = usage.get("prompt_tokens") if isinstance(usage.get("prompt_tokens"), int) else None
        details = usage.get("prompt_tokens_details") or {}
        if isinstance(details.get("cached_tokens"), int):
            s.cached_tokens = details["cached_tokens"]
        elif s.timings and isinstance(s.timings.get("cache_n"), int):
            s.cached_tokens = s.timings["cache_n"]
        if s.error is None and not (s.finish_reason and s.saw_done):
            missing = "a finish reason" if not s.finish_reason else "[DONE]"
            s.error = f"IncompleteStream: the stream ended without {missing}"
        if s.error is None and s.t_first is None:
            s.error = "NoText: the stream carried no text delta"
        s.ok = s.error is None
        return s
