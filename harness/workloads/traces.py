"""Trace replay, pure: reading a timestamped trace and turning it into requests that leave at
their times, with prompts synthesised so that equal hash ids give equal blocks of tokens.

Two formats, told apart by their first line:

* **Mooncake JSONL** (``{``): one object a line, ``timestamp`` in milliseconds, ``input_length``
  and ``output_length`` in tokens, ``hash_ids`` (one id per block of ``block_tokens`` prompt
  tokens; equal ids stand for an equal block and so for a prefix a cache can reuse). Mooncake's
  own traces use 512-token blocks.
* **plain**: one request a line, ``SECONDS INPUT_TOKENS OUTPUT_TOKENS`` separated by spaces or
  commas (``#`` starts a comment); no shared blocks, every prompt its own.

Every number is bounded, so what is accepted is replayed in bounded memory and time: timestamps
finite, from 0 to a week (``MAX_TRACE_S``); lengths from 1 to ``MAX_TOKENS`` (the bound of
``--output-tokens``); at most ``MAX_TRACE_ROWS`` requests and ``MAX_LINE_CHARS`` characters a
line; of a row's hash ids only the blocks its prompt fills are kept. Rows out of time order are
sent in time order; each request's ``trace_index`` is its row's place in the file (0 the first
request) and ``trace_line`` its line. Prompts are synthesised when a request is about to leave
(``TraceJobs``), not all before the first.

Each request asks for exactly its output length where the engine allows it
(``harness.workloads.request.forced_fields``); what came back is in its sample and the record.
"""

from __future__ import annotations

import functools
import json
import random
from dataclasses import dataclass, field

from harness.bounds import MAX_SECONDS, MAX_TOKENS
from harness.workloads.request import Request, words_text
from harness.errors import ConfigError

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

MOONCAKE_BLOCK_TOKENS = 512
MAX_TRACE_ROWS = 500_000  # requests in one trace (Mooncake's public traces hold about 24,000)
MAX_LINE_CHARS = 1 << 20  # one line of a trace (a Mooncake row with thousands of hash ids fits)
MAX_TRACE_S = MAX_SECONDS  # the latest timestamp, and the longest replay: a week
MAX_HASH_ID = 2**63 - 1


@dataclass(frozen=True, slots=True)
class TraceRow:
    """One request of a trace: when (seconds from the trace's start), its lengths, its blocks,
    and where it stood in the file (``index``: 0 the first request; ``line``: 1 the first line)."""

    t_s: float
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...] = ()
    index: int = field(default=0, compare=False)  # where it stood, not what it asks
    line: int = field(default=0, compare=False)


def _whole(where: str, name: str, value: object, high: int = MAX_TOKENS) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
        raise ConfigError(f"{where}: {name} must be a whole number from 1 to {high}, got {value!r}")
    return value


def _time(where: str, name: str, value: float, unit: str, per_s: float) -> float:
    """Seconds from the trace's start of a timestamp in ``unit`` (``per_s`` of them a second). The
    range is compared before any conversion: NaN fails it, and so does a whole number past any
    float's range (JSON holds them), which float() would raise OverflowError on."""
    if not 0 <= value <= MAX_TRACE_S * per_s:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:20] + "..."
        raise ConfigError(
            f"{where}: {name} must be {unit} from 0 to {MAX_TRACE_S * per_s:.0f} (a week), got {shown}"
        )
    return float(value) / per_s


def _hash_ids(where: str, ids: object, keep: int, seen: dict[int, int]) -> tuple[int, ...]:
    if not isinstance(ids, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= MAX_HASH_ID for i in ids
    ):
        raise ConfigError(f"{where}: hash_ids must be a list of whole numbers from 0 to 2^63 - 1")
    # the blocks past the prompt's length are never sent; an id seen before is the same object
    return tuple(seen.setdefault(i, i) for i in ids[:keep])


def _mooncake_row(where: str, line: str, block_tokens: int, seen: dict[int, int]) -> TraceRow:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        raise ConfigError(f"{where}: not a JSON object (a Mooncake trace has one a line)") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: not a JSON object (a Mooncake trace has one a line)")
    stamp = obj.get("timestamp")
    if not isinstance(stamp, (int, float)) or isinstance(stamp, bool):
        raise ConfigError(f"{where}: timestamp must be milliseconds from the trace's start, got {stamp!r}")
    t_s = _time(where, "timestamp", stamp, "milliseconds", 1000.0)
    inp = _whole(where, "input_length", obj.get("input_length"))
    out = _whole(where, "output_length", obj.get("output_length"))
    return TraceRow(t_s, inp, out, _hash_ids(where, obj.get("hash_ids", []), -(-inp // block_tokens), seen))


def _plain_row(where: str, line: str, block_tokens: int, seen: dict[int, int]) -> TraceRow:
    parts = line.replace(",", " ").split()
    try:
        if len(parts) != 3:
            raise ValueError
        t, inp, out = float(parts[0]), int(parts[1]), int(parts[2])
    except ValueError:
        raise ConfigError(f"{where}: write SECONDS INPUT_TOKENS OUTPUT_TOKENS, got {line[:80]!r}") from None
    return TraceRow(
        _time(where, "the time", t, "seconds", 1.0),
        _whole(where, "INPUT_TOKENS", inp),
        _whole(where, "OUTPUT_TOKENS", out),
    )


def parse_trace(
    text: str, name: str = "trace", block_tokens: int = MOONCAKE_BLOCK_TOKENS
) -> tuple[str, list[TraceRow]]:
    """(format, rows in time order) of a trace's text; ConfigError naming the file and the line
    otherwise. One pass over the lines, each row built as it is read."""
    fmt, read = "", _plain_row
    rows: list[TraceRow] = []
    seen: dict[int, int] = {}  # each hash id once: a trace's ids repeat (its shared prefixes)
    for number, raw in enumerate(text.splitlines(), 1):
        where = f"{name} line {number}"
        if len(raw) > MAX_LINE_CHARS:
            raise ConfigError(f"{where}: longer than {MAX_LINE_CHARS:,} characters; one request a line")
        line = raw.strip() if raw.lstrip().startswith("{") else raw.split("#", 1)[0].strip()
        if not line:
            continue
        if not fmt:
            fmt = "mooncake" if line.startswith("{") else "plain"
            read = _mooncake_row if fmt == "mooncake" else _plain_row
        if len(rows) >= MAX_TRACE_ROWS:
            raise ConfigError(f"{where}: the trace holds more than {MAX_TRACE_ROWS:,} requests; cut it")
        row = read(where, line, block_tokens, seen)
        rows.append(TraceRow(row.t_s, row.input_tokens, row.output_tokens, row.hash_ids, len(rows), number))
    if not rows:
        raise ConfigError(f"{name}: the trace holds no requests")
    rows.sort(key=lambda r: r.t_s)  # stable: rows of one time keep the file's order
    return fmt, rows


@functools.lru_cache(maxsize=4096)
def _block(hash_id: int, tokens: int) -> tuple[str, ...]:
    return tuple(words_text(tokens, random.Random(f"block-{hash_id}")).split())


def block_words(hash_id: int, tokens: int) -> list[str]:
    """The block a hash id stands for: the same ``tokens`` words for the same id, every time."""
    return list(_block(hash_id, tokens))


def synthesise(row: TraceRow, block_tokens: int, rng: random.Random) -> str:
    """A prompt of ``row.input_tokens`` tokens (before the chat template's own): the row's blocks
    in order, each the words of its hash id (``block_words``), the last one cut to length; a row
    without hash ids (or longer than its blocks) gets fresh words from ``rng`` for the rest."""
    out: list[str] = []
    for hid in row.hash_ids:
        if len(out) >= row.input_tokens:
            break
        out += _block(hid, block_tokens)
    if len(out) < row.input_tokens:
        out += words_text(row.input_tokens - len(out), rng).split()
    return " ".join(out[: row.input_tokens])  # the chat template adds its own few tokens


class TraceJobs:
    """The trace's requests in time order, each built when asked for (its prompt synthesised
    then, from a generator of its own row), the last one kept: a list's ``len`` and ``[i]``
    without holding every prompt of a long trace at once."""

    def __init__(self, plan: TracePlan) -> None:
        self.plan = plan
        self._kept: tuple[int, Request] | None = None

    def __len__(self) -> int:
        return len(self.plan.rows)

    def __getitem__(self, i: int) -> Request:
        if self._kept is not None and self._kept[0] == i:
            return self._kept[1]
        job = self.plan.job(i)
        self._kept = (i, job)
        return job


@dataclass(frozen=True)
class TracePlan:
    """A trace to replay: its rows, how its blocks are sized, how its time is scaled (0.5 plays
    it twice as fast), where it came from."""

    rows: tuple[TraceRow, ...]
    source: str
    fmt: str
    block_tokens: int = MOONCAKE_BLOCK_TOKENS
    time_scale: float = 1.0
    seed: int = 1

    def job(self, i: int) -> Request:
        """The ``i``-th request in time order (IndexError past the last)."""
        r = self.rows[i]
        tags = {
            "trace_index": r.index,
            "trace_line": r.line,
            "input_tokens_asked": r.input_tokens,
            "output_tokens_asked": r.output_tokens,
        }
        prompt = synthesise(r, self.block_tokens, random.Random(f"{self.seed}-{r.index}"))
        return Request([{"role": "user", "content": prompt}], r.output_tokens, True, tags)

    def schedule(self) -> tuple[list[float], TraceJobs]:
        """Send offsets from the first request's time, and the requests, in order."""
        t0 = self.rows[0].t_s
        return [(r.t_s - t0) * self.time_scale for r in self.rows], TraceJobs(self)

    def span_s(self) -> float:
        """Seconds from the first request's departure to the last's, as replayed."""
        return (self.rows[-1].t_s - self.rows[0].t_s) * self.time_scale

    def reordered(self) -> bool:
        """Whether the file lists its rows out of time order (they are sent in time order)."""
        return any(r.index != pos for pos, r in enumerate(self.rows))

    def largest(self) -> int:
        """The most tokens one request asks for, prompt and output together."""
        return max(r.input_tokens + r.output_tokens for r in self.rows)

    def rate(self) -> float:
        """The trace's mean arrival rate as replayed, requests per second (one request: 1)."""
        span = self.span_s()
        return (len(self.rows) - 1) / span if span > 0 else 1.0

    def params(self) -> dict:
        return {
            "trace": self.source,
            "trace_format": self.fmt,
            "time_scale": self.time_scale,
            "requests": len(self.rows),
            "block_tokens": self.block_tokens,
            "span_s": round(self.span_s(), 3),
        }


def span_words(plan: TracePlan) -> str:
    """The replay's length as a person reads it, and, past an hour, the unit the timestamps were
    read in (a trace in microseconds read as milliseconds plays a thousand times too slowly)."""
    span = plan.span_s()
    out = f"the replay spans {span:,.1f} s" + (f" ({span / 3600:.1f} h)" if span >= 3600 else "")
    out += f" from its first request to its last ({len(plan.rows)} requests)"
    if span >= 3600:
        unit = "milliseconds" if plan.fmt == "mooncake" else "seconds"
        out += f"; its timestamps were read as {unit}: scale another unit with --trace-time-scale"
    if plan.reordered():
        out += "; the file's rows are out of time order: sent in time order, trace_index their place in it"
    return out
