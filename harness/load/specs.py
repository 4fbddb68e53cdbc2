"""Workload options read into plans, for the sweep's command line and Locust's (headless, web UI)
alike: a length spec's ``file:PATH`` is read here (the core parses; it does no I/O). No Locust
import."""

from __future__ import annotations

from pathlib import Path

from harness.core import bounds
from harness.core.sharegpt import read_sharegpt
from harness.core.workloads import ConversationPlan, LengthPlan, Lengths, file_counts, parse_lengths
from harness.errors import ConfigError


def lengths_from(flag: str, text: str | None) -> Lengths | None:
    """The length distribution ``text`` states (None for none); ConfigError, one line, otherwise."""
    if not text:
        return None
    values = None
    if text.startswith("file:"):
        path = Path(text[5:])
        try:
            values = file_counts(flag, path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or type(exc).__name__
            raise ConfigError(
                f"{flag}: cannot read {path} ({why}); give a file of counts, one a line"
            ) from None
    return parse_lengths(flag, text, values, bounds.MAX_TOKENS)


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
    turn_lengths = lengths_from("--turns", turns)
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
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or type(exc).__name__
        raise ConfigError(f"--sharegpt: cannot read {path} ({why}); give a ShareGPT JSON file") from None
    return read_sharegpt(text, path)[0]
