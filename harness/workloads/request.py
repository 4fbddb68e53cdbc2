"""Workloads beyond the labs' prompt sets, pure: length distributions, prompts of a stated length,
conversations and what each request of one carries. No I/O, no clocks; every draw comes from a
``random.Random`` the caller seeds.

Length distributions (``fixed:N``, ``uniform:LO-HI``, ``normal:MEAN,SD``, ``file:PATH``) are
``harness.workloads.lengths``, re-exported here.

A prompt of N tokens is N words drawn from a list of short, common English words, each of which
is one token with its leading space in the BPE vocabularies of the usual open models (Llama,
Qwen, Gemma) and in the practice server's tokeniser; the server's own ``usage.prompt_tokens`` is
what the record keeps as sent.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from harness.workloads.lengths import Lengths, file_counts, parse_lengths  # noqa: F401  (re-exported)

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

# One token each, with the leading space, in common BPE vocabularies (and the practice tokeniser).
_WORD_TEXT = (
    "the of and to in is it that for was on are as with his they at be this from have or by one "
    "had not but what all were when we there can an your which their said if do will each about "
    "how up out them then she many some so these would other into has more her two like him see "
    "time could no make than first been its who now people my made over did down only way find "
    "use may water long little very after words called just where most know get through back "
    "much go good new write our me man too any day same right look think also around another "
    "came come work three word must because does part even place well such here take why help "
    "put different away again off went old number great tell men say small every found still "
    "between name should home big give air line set own under read last never us left end along "
    "while might next sound below saw something thought both few those always show large often "
    "together asked house world going want school important until form food keep children feet "
    "land side without boy once animal life enough took four head above kind began almost live "
    "page got earth need far hand high year mother light country father let night picture being "
    "study second soon story since white ever paper hard near sentence better best across during "
    "today however sure knew try told young sun thing whole hear example heard several change "
    "answer room sea against top turned learn point city play toward five himself usually money"
)
# words of six letters or fewer: one token each in the practice tokeniser too (it splits longer ones)
WORDS = tuple(w for w in _WORD_TEXT.split(" ") if len(w) <= 6)


# The first word has no space before it, and some words are two tokens without one (seen on Gemma
# 3: one request in six of 50-200 words came out a token longer): the first is one of these, one
# token with or without the space in the usual vocabularies.
FIRST_WORDS = ("the", "and", "of", "to", "in", "is", "it", "for")


def words_text(count: int, rng: random.Random) -> str:
    """``count`` words from ``WORDS``, the first from ``FIRST_WORDS``: ``count`` tokens on the
    usual vocabularies."""
    if count <= 0:
        return ""
    return " ".join([rng.choice(FIRST_WORDS), *(rng.choice(WORDS) for _ in range(count - 1))])


def sized_prompt(tokens: int, rng: random.Random) -> str:
    """A prompt of ``tokens`` tokens before the chat template adds its own (one word a token, the
    words random, so two prompts share no more than a word or two at their start)."""
    return words_text(max(tokens, 1), rng)


@dataclass
class Request:
    """One request a workload hands a user: the whole message list, the output length to ask for
    (None: the sweep's ``--max-tokens``), whether to force it, and the tags its sample carries
    (``conversation``, ``turn``, ``input_tokens_asked``, ...). ``due``: when it should leave on the
    sender's clock (open loop), for its ``schedule_lateness_s``."""

    messages: list[dict]
    max_tokens: int | None = None
    force_length: bool = False
    tags: dict = field(default_factory=dict)
    due: float | None = None
    extra: dict = field(default_factory=dict)  # more body fields (the agent loop's tools)


def forced_fields(tokens: int) -> dict:
    """The body fields that ask an engine for exactly ``tokens`` output tokens where it can: vLLM
    honours ``min_tokens`` and ``ignore_eos``; llama-server and the practice server
    ``ignore_eos`` (the answer runs to ``max_tokens``)."""
    return {"max_tokens": tokens, "min_tokens": tokens, "ignore_eos": True}


@dataclass(frozen=True)
class LengthPlan:
    """Input and output lengths for a workload of single requests (either may be None: the
    prompt set's own prompts, the sweep's ``--max-tokens``)."""

    input_tokens: Lengths | None = None
    output_tokens: Lengths | None = None

    def request(self, prompt: str | None, rng: random.Random, words: random.Random | None = None) -> Request:
        """One request: a sized prompt when input lengths are set (else ``prompt``), its output
        forced to a drawn length when output lengths are set."""
        tags: dict = {}
        if self.input_tokens is not None:
            n = self.input_tokens.draw(rng)
            prompt = sized_prompt(n, words or rng)
            tags["input_tokens_asked"] = n
        out = None
        if self.output_tokens is not None:
            out = self.output_tokens.draw(rng)
            tags["output_tokens_asked"] = out
        return Request([{"role": "user", "content": prompt or ""}], out, out is not None, tags)

    def params(self) -> dict:
        out = {}
        if self.input_tokens is not None:
            out["input_tokens"] = self.input_tokens.describe()
        if self.output_tokens is not None:
            out["output_tokens"] = self.output_tokens.describe()
        return out


def largest_request(
    max_tokens: int, lengths: Any = None, conversations: Any = None, trace: Any = None
) -> int | None:
    """The most tokens one request of the workload asks for, prompt and output together, where
    the workload states it (None for the prompt sets, whose prompts the endpoint proof sizes): a
    trace's longest row; drawn lengths' largest input and output (``--max-tokens`` without
    ``--output-tokens``); a conversation turn's new message and answer (its history comes on top)."""
    if trace is not None:
        return int(trace.largest())
    if conversations is not None:
        plan, first = conversations, conversations.message_tokens.largest()
    elif lengths is not None and lengths.input_tokens is not None:
        plan, first = lengths, lengths.input_tokens.largest()
    else:
        return None
    return int(first + (plan.output_tokens.largest() if plan.output_tokens is not None else max_tokens))


def largest_output(max_tokens: int, lengths: Any = None, conversations: Any = None) -> int:
    """The most output tokens one request asks for: the drawn output lengths' largest where they
    are given (``--output-tokens``), else ``--max-tokens``. Alone it is already a lower bound of a
    request's tokens, prompt set or not."""
    for plan in (conversations, lengths):
        if plan is not None and plan.output_tokens is not None:
            return int(plan.output_tokens.largest())
    return int(max_tokens)
