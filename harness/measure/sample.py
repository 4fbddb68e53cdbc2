"""One request -> one sample (docs/architecture.md, "Definitions"): what the client saw of one
request, its times on one monotonic clock, and what is read from them (TTFT from the departure,
TPOT as ``vllm bench serve`` defines it, the gaps between tokens, the decode rate where a true one
exists). An endpoint kind's answer parser (``harness.endpoints``) fills it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


@dataclass
class Sample:
    """What the client saw of one request. Times are seconds on one monotonic clock."""

    t_send: float  # when the client set out to send it
    ok: bool = False
    error: str | None = None
    t_first: float | None = None
    t_end: float | None = None
    token_times: list[float] = field(default_factory=list)  # arrival of every text/tool delta
    output_tokens: int | None = None
    token_source: str | None = None  # "usage", "deltas", or "usage-rejected" (an absurd usage count)
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    finish_reason: str | None = None
    fields: list[str] = field(default_factory=list)
    saw_done: bool = False
    timings: dict | None = None
    text: str = ""  # the answer's content, its first ``stream.MAX_KEPT_TEXT`` characters
    text_cut: int = 0  # characters of content past that, not kept
    request_id: str | None = None  # the completion id the server gave this response
    clock: str | None = None  # "kernel": arrival times are the kernel's receive stamps; "read": when read
    read_lags: list[float] = field(default_factory=list)  # per stamped token: how long it waited to be read
    t_sent: float | None = None  # the departure: just before the request was written (None: not known)
    t_written: float | None = None  # when the write of the request returned (the bias: t_written - t_sent)
    # tokens that came in one read with a later token: the kernel had merged their packets and kept
    # only the newer stamp, so their arrival is the later packet's (the client read them late)
    merged_tokens: int = 0
    first_merged: bool = False  # the first token among them (its TTFT is the later packet's)
    usage_note: str | None = None  # why the server's usage count was not taken, when it was not
    cached_note: str | None = None  # why its cached count was not taken (more than the prompt)
    # what the workload said of this request (harness.workloads.request.Request.tags): conversation,
    # turn, the lengths asked for, schedule_lateness_s; plain JSON values, kept in its sample line
    tags: dict = field(default_factory=dict)
    # the tool calls the answer made, joined from their deltas: {"id", "name", "arguments"} each
    tool_calls: list[dict] = field(default_factory=list)
    tool_calls_dropped: int = 0  # pieces of calls past bounds.MAX_CALLS in one answer, not kept
    # why the answer has no first token (an endpoint kind that does not stream), so no TTFT, TPOT
    # or token gaps: absent with its reason, never a zero
    ttft_absent: str | None = None

    @property
    def t_departed(self) -> float:
        """When the request left: just before it was written to the socket, where known."""
        return self.t_send if self.t_sent is None else self.t_sent

    @property
    def ttft(self) -> float | None:
        """Request sent -> first token: from the departure, so the client's own delay before the
        request left (connecting, writing, waiting its turn) is not the server's."""
        return None if self.t_first is None else self.t_first - self.t_departed

    @property
    def send_delay(self) -> float | None:
        """How long the client took from setting out to the request's departure."""
        return None if self.t_sent is None else self.t_sent - self.t_send

    @property
    def tpot(self) -> float | None:
        """(end - first token) / (output tokens - 1), the vllm bench serve definition, whose end is
        the last token's arrival (its latency runs to the last chunk carrying text): the time
        between tokens, so a ``[DONE]`` or usage chunk sent late is no part of it."""
        if self.t_first is None or self.t_end is None or not self.output_tokens or self.output_tokens < 2:
            return None
        end = self.token_times[-1] if self.token_times else self.t_end
        return (end - self.t_first) / (self.output_tokens - 1)

    @property
    def itl(self) -> list[float]:
        t = self.token_times
        return [b - a for a, b in zip(t, t[1:], strict=False)]


DECODE_FLOOR_S = 1e-3  # a decode interval shorter than this is one network read, not a rate
# No engine decodes one stream anywhere near this fast (the fastest public figures are a few
# thousand tokens per second per stream): a stream past it is a flood, a replay or a proxy's
# buffer let go, and its rate is no decode speed.
MAX_DECODE_RATE = 20_000.0


def decode_rate(s: Sample) -> tuple[float | None, str | None]:
    """Tokens per second after the first, (output tokens - 1) / (last token - first token), with
    None and the reason where no true rate exists: one token, one delta, a zero interval, or a
    rate past ``MAX_DECODE_RATE`` (implausible for any engine)."""
    if not s.output_tokens or s.output_tokens < 2:
        return None, "one output token: no interval to time"
    if len(s.token_times) < 2 or s.t_first is None:
        return None, "the answer came in one delta: no interval to time"
    interval = s.token_times[-1] - s.t_first
    if interval < DECODE_FLOOR_S:
        return None, f"the deltas came within {DECODE_FLOOR_S * 1000:g} ms of each other (one read)"
    rate = (s.output_tokens - 1) / interval
    if rate > MAX_DECODE_RATE:
        return None, (
            f"implausible: {rate:,.0f} tokens/s for one stream is past any engine's decode "
            f"({MAX_DECODE_RATE:,.0f}); the deltas came faster than tokens are made (a flood, a "
            "replay or a proxy's buffer)"
        )
    return rate, None


_FIELDS = tuple(f.name for f in dataclasses.fields(Sample))


def as_message(sample: Sample) -> dict:
    """The sample as a worker sends it to its master: its fields by name, the values themselves
    (no copies: the message is serialised at once, and the sample is finished). What
    ``dataclasses.asdict`` gives, without its deep copy of every list and dict: 1.7 µs against
    206 µs for a sample of 128 tokens (measured). A worker sends a sample as each request ends:
    with the deep copy, 64 streams ending together held its event loop some 13 ms, and the first
    tokens of the requests it had just sent were read one or two token gaps late."""
    return {name: getattr(sample, name) for name in _FIELDS}
