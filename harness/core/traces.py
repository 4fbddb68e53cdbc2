"""Trace replay, pure: reading a timestamped trace and turning it into requests that leave at
their times, with prompts synthesised so that equal hash ids give equal blocks of tokens.

Two formats, told apart by their first line:

* **Mooncake JSONL** (``{``): one object a line, ``timestamp`` in milliseconds, ``input_length``
  and ``output_length`` in tokens, ``hash_ids`` (one id per block of ``block_tokens`` prompt
  tokens; equal ids stand for an equal block and so for a prefix a cache can reuse). Mooncake's
  own traces use 512-token blocks.
* **plain**: one request a line, ``SECONDS INPUT_TOKENS OUTPUT_TOKENS`` separated by spaces or
  commas (``#`` starts a comment); no shared blocks, every prompt its own.

Each request asks for exactly its output length where the engine allows it
(``harness.core.workloads.forced_fields``); what came back is in its sample and the record.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from harness.core.workloads import Request, words_text
from harness.errors import ConfigError

MOONCAKE_BLOCK_TOKENS = 512


@dataclass(frozen=True)
class TraceRow:
    """One request of a trace: when (seconds from the trace's start), its lengths, its blocks."""

    t_s: float
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...] = ()


def _whole(where: str, name: str, value: object, low: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ConfigError(f"{where}: {name} must be a whole number of at least {low}, got {value!r}")
    return value


def _mooncake_row(where: str, line: str) -> TraceRow:
    try:
        obj = json.loads(line)
    except ValueError:
        raise ConfigError(f"{where}: not a JSON object (a Mooncake trace has one a line)") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: not a JSON object (a Mooncake trace has one a line)")
    stamp = obj.get("timestamp")
    if not isinstance(stamp, (int, float)) or isinstance(stamp, bool) or stamp < 0:
        raise ConfigError(f"{where}: timestamp must be milliseconds from the trace's start, got {stamp!r}")
    ids = obj.get("hash_ids", [])
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise ConfigError(f"{where}: hash_ids must be a list of whole numbers")
    return TraceRow(
        stamp / 1000.0,
        _whole(where, "input_length", obj.get("input_length")),
        _whole(where, "output_length", obj.get("output_length")),
        tuple(ids),
    )


def _plain_row(where: str, line: str) -> TraceRow:
    parts = line.replace(",", " ").split()
    try:
        if len(parts) != 3:
            raise ValueError
        t, inp, out = float(parts[0]), int(parts[1]), int(parts[2])
    except ValueError:
        raise ConfigError(f"{where}: write SECONDS INPUT_TOKENS OUTPUT_TOKENS, got {line!r}") from None
    if t < 0 or inp < 1 or out < 1:
        raise ConfigError(f"{where}: times from 0 and lengths from 1, got {line!r}")
    return TraceRow(t, inp, out)


def parse_trace(text: str, name: str = "trace") -> tuple[str, list[TraceRow]]:
    """(format, rows in time order) of a trace's text; ConfigError naming the line otherwise."""
    lines = [
        (i, ln.split("#", 1)[0].strip() if not ln.lstrip().startswith("{") else ln.strip())
        for i, ln in enumerate(text.splitlines(), 1)
    ]
    lines = [(i, ln) for i, ln in lines if ln]
    if not lines:
        raise ConfigError(f"{name}: the trace holds no requests")
    fmt = "mooncake" if lines[0][1].startswith("{") else "plain"
    read = _mooncake_row if fmt == "mooncake" else _plain_row
    rows = [read(f"{name} line {i}", ln) for i, ln in lines]
    return fmt, sorted(rows, key=lambda r: r.t_s)


def block_words(hash_id: int, tokens: int) -> list[str]:
    """The block a hash id stands for: the same ``tokens`` words for the same id, every time."""
    return words_text(tokens, random.Random(f"block-{hash_id}")).split()


def synthesise(row: TraceRow, block_tokens: int, rng: random.Random) -> str:
    """A prompt of ``row.input_tokens`` tokens (before the chat template's own): the row's blocks
    in order, each the words of its hash id (``block_words``), the last one cut to length; a row
    without hash ids (or longer than its blocks) gets fresh words from ``rng`` for the rest."""
    out: list[str] = []
    for hid in row.hash_ids:
        if len(out) >= row.input_tokens:
            break
        out += block_words(hid, block_tokens)
    if len(out) < row.input_tokens:
        out += words_text(row.input_tokens - len(out), rng).split()
    return " ".join(out[: row.input_tokens])  # the chat template adds its own few tokens


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

    def schedule(self) -> tuple[list[float], list[Request]]:
        """Send offsets from the first request's time, and the requests, in order."""
        rng = random.Random(self.seed)
        t0 = self.rows[0].t_s
        offsets = [(r.t_s - t0) * self.time_scale for r in self.rows]
        jobs = []
        for i, r in enumerate(self.rows):
            tags = {
                "trace_index": i,
                "input_tokens_asked": r.input_tokens,
                "output_tokens_asked": r.output_tokens,
            }
            prompt = synthesise(r, self.block_tokens, rng)
            jobs.append(Request([{"role": "user", "content": prompt}], r.output_tokens, True, tags))
        return offsets, jobs

    def rate(self) -> float:
        """The trace's mean arrival rate as replayed, requests per second (one request: 1)."""
        span = (self.rows[-1].t_s - self.rows[0].t_s) * self.time_scale
        return (len(self.rows) - 1) / span if span > 0 else 1.0

    def params(self) -> dict:
        return {
            "trace": self.source,
            "trace_format": self.fmt,
            "time_scale": self.time_scale,
            "requests": len(self.rows),
            "block_tokens": self.block_tokens,
        }
