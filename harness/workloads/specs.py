"""Workload options read into plans, for the sweep's command line and Locust's (headless, web UI)
alike: a length spec's ``file:PATH`` is read here (the core parses; it does no I/O). No Locust
import."""

from __future__ import annotations

from pathlib import Path

from harness import bounds
from harness.workloads.sharegpt import read_sharegpt
from harness.workloads.conversations import ConversationPlan
from harness.workloads.request import LengthPlan, Lengths, file_counts, parse_lengths
from harness.errors import ConfigError
from harness.workloads import files as input_files


MAX_LENGTHS_FILE_BYTES = 16 << 20  # a file of counts, read whole
MAX_SHAREGPT_BYTES = 1 << 30
MAX_TURNS = 1000  # turns of one conversation (its history is bounded too: conversations.MAX_HISTORY_CHARS)


def lengths_from(flag: str, text: str | None, high: int = bounds.MAX_TOKENS) -> Lengths | None:
    """The length distribution ``text`` states (None for none); ConfigError, one line, otherwise.
    A ``file:PATH`` must be a regular file of at most 16 MiB of UTF-8 text (a FIFO, a device, a
    directory or a binary file is refused before anything is read from it)."""
    if not text:
        return None
    values = None
    if text.startswith("file:"):
        what = "a file of counts, one a line"
        path = text[5:]
        values = file_counts(
            f"{flag} {path}", input_files.read_text(flag, path, MAX_LENGTHS_FILE_BYTES, what), high
        )
    return parse_lengths(flag, text, values, high)


def length_plan(input_tokens: str | None, output_tokens: str | None) -> LengthPlan | None:
    """Drawn lengths for single requests, or None when neither is set (the prompt set as it is)."""
    plan = LengthPlan(
        lengths_from("--input-tokens", input_tokens), lengths_from("--output-tokens", output_tokens)
    )
    return plan if plan.input_tokens or plan.output_tokens else None


def conversation_plan(
    turns: str,
    message_tokens: str,
    think_s: float,
    output_tokens: str | None,
    agent: bool = False,
    sharegpt: str | None = None,
) -> ConversationPlan:
    """The conversations (or agent) workload's plan from its options; ``sharegpt``: a ShareGPT
    file whose conversations' user messages the conversations send."""
    bounds.number("--think-time", think_s, 0, bounds.MAX_SECONDS)
    turn_lengths = lengths_from("--turns", turns, MAX_TURNS)
    message = lengths_from("--message-tokens", message_tokens)
    if turn_lengths is None or message is None:
        raise ConfigError(
            "--workload conversations needs --turns and --message-tokens (fixed:N, uniform:LO-HI, ...)"
        )
    scripts: tuple = ()
    if sharegpt:
        scripts = tuple(read_conversations(sharegpt))
    output = lengths_from("--output-tokens", output_tokens)
    return ConversationPlan(turn_lengths, message, think_s, output, scripts, Path(sharegpt or "").name, agent)


def read_conversations(path: str) -> list[tuple[str, ...]]:
    """The user messages of each conversation in a ShareGPT file (ConfigError, one line)."""
    # ShareGPT's own V3 file is about 650 MB: read whole, up to a GiB, never a pipe or a device
    text = input_files.read_text("--sharegpt", path, MAX_SHAREGPT_BYTES, "a ShareGPT JSON file")
    return read_sharegpt(text, path)[0]
