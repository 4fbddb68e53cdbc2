"""Conversations, pure: each holds turns; each turn sends the whole history (system prompt, every
earlier message and answer) plus a new user message, and its answer joins the history. The agent
loop (``AgentSession``) is the same over the labs' preamble and tools, each tool call answered by
a made-up tool result.

Every history is bounded: an answer the client did not keep whole (past ``MAX_KEPT_TEXT``
characters) or one that would take the history past ``MAX_HISTORY_CHARS`` ends its conversation
at that turn, and the turn's sample says why (``end_note``). An answer without text is a turn
of its own all the same, its kind in the sample (``answer``: ``failed``, ``reasoning-only``). An
agent's tool call to a function the request never offered, with arguments that are no JSON
object, or past ``MAX_CALLS`` calls in one answer is a failure with its reason
(``tool_errors``), answered by an error result; a server that asks for tools forever ends at
``--turns`` requests, tool results included.

A turn the server refused for its context (``context_refusal``: the history plus the answer's
budget passed the context per sequence) ends its conversation there: every later turn would only
send a longer history to the same refusal. The rest of its turns are not sent; its sample says how
many (``turns_not_sent``) and why (``end_note``).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass

from harness.workloads.lengths import Lengths
from harness.workloads.prompts import LAB_TOOLS, PREAMBLE, QUESTIONS
from harness.measure.sample import Sample
from harness.safe_text import safe_text
from harness.measure.stream import MAX_KEPT_TEXT
from harness.bounds import MAX_CALLS
from harness.workloads.request import Request, words_text

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

MAX_HISTORY_CHARS = 2 << 20  # characters of one conversation's history (about 500,000 tokens)
WORD_CHARS = 7  # the most characters a synthesised word takes (six letters and a space)
TOOL_RESULT_CHARS = 200  # the most characters one made-up tool result takes (``tool_result``)

SYSTEM_PROMPT = "You are a helpful assistant. Keep every answer short and plain."

# A 400 naming the context: llama-server's "the request exceeds the available context size",
# vLLM's "This model's maximum context length is N tokens", OpenAI's "context_length_exceeded",
# "prompt is too long" (the load's error text is "HTTP 400: <the server's message>").
CONTEXT_REFUSAL = re.compile(r"(?is)^HTTP 400\b.*(context|too long|maximum.{0,40}length)")


def context_refusal(error: str | None) -> bool:
    """Whether a request's error is the server refusing it for its context (a 400 naming it)."""
    return bool(error) and CONTEXT_REFUSAL.search(error or "") is not None


@dataclass(frozen=True)
class ConversationPlan:
    """Conversations: each holds ``turns`` turns (a distribution), each turn sends the whole
    history (system prompt, every earlier message and answer) plus a new user message of
    ``message_tokens`` tokens, after ``think_s`` seconds of the user's own time."""

    turns: Lengths
    message_tokens: Lengths
    think_s: float = 0.0
    output_tokens: Lengths | None = None
    # a conversation file's user messages (harness.workloads.sharegpt): conversation n takes the
    # (n-1)-th script, all its turns, instead of drawn turns and words
    scripts: tuple[tuple[str, ...], ...] = ()
    source: str = ""
    agent: bool = False  # the agent loop: the labs' preamble and tools, tool calls answered

    def params(self) -> dict:
        out: dict = {"think_s": self.think_s}
        if self.scripts:
            out.update(conversation_file=self.source, file_conversations=len(self.scripts))
        else:
            out.update(turns=self.turns.describe(), message_tokens=self.message_tokens.describe())
        if self.output_tokens is not None:
            out["output_tokens"] = self.output_tokens.describe()
        return out

    def start(self, number: int, rng: random.Random, words: random.Random | None = None) -> Conversation:
        """Conversation ``number`` (from 1) of this plan: lengths drawn from ``rng``, text from
        ``words`` (``rng`` too when not given)."""
        return (AgentSession if self.agent else Conversation)(self, number, rng, words)


class Conversation:
    """One conversation in progress: ``next_request`` gives the next turn's request (None when
    the conversation is over), ``answered`` adds the server's answer to the history."""

    def __init__(
        self, plan: ConversationPlan, number: int, rng: random.Random, words: random.Random | None = None
    ) -> None:
        self.plan, self.number, self.rng = plan, number, rng
        self.words = words or rng  # the text's own generator (lengths stay with ``rng``)
        self.script = plan.scripts[(number - 1) % len(plan.scripts)] if plan.scripts else ()
        self.turns = len(self.script) if self.script else plan.turns.draw(rng)
        self.turn = 0
        # words of its own first, so two conversations (of this level or any other) share no more
        # than the chat template's opening tokens: their histories are their own to cache
        opening = f"{words_text(4, self.words)}: conversation {number}."
        self.history: list[dict] = []
        self.chars = 0  # characters of the history's text (``message_chars``), against its bound
        self.tool_errors: list[str] = []  # the agent's last answer: why each bad tool call failed
        self.add({"role": "system", "content": f"{opening} {SYSTEM_PROMPT}"})

    def add(self, message: dict) -> None:
        """One message joins the history (its characters counted)."""
        self.history.append(message)
        self.chars += message_chars(message)

    def end(self, why: str) -> str:
        """End the conversation at this turn; the note its sample keeps."""
        self.turns = self.turn
        return f"{why}: the conversation ends at turn {self.turn}"

    def next_message_chars(self) -> int:
        """The most characters the next turn's new message may add to the history."""
        if self.script:
            return len(self.script[self.turn]) if self.turn < len(self.script) else 0
        return self.plan.message_tokens.largest() * WORD_CHARS

    def fits(self, chars: int, cut: int) -> str | None:
        """Why an answer of ``chars`` characters (``cut`` more not kept) cannot join the history
        and be followed by another turn (the conversation then ends), or None when it can."""
        if cut:
            return self.end(f"the answer passed the {MAX_KEPT_TEXT:,} characters a sample keeps")
        if self.chars + chars + self.next_message_chars() > MAX_HISTORY_CHARS:
            return self.end(f"the history would pass its bound of {MAX_HISTORY_CHARS:,} characters")
        return None

    def asks_more(self) -> bool:
        """Whether the last answer wants another turn the conversation will not have (a tool call
        waiting for its result)."""
        return False

    def take_answer(self, sample: Sample) -> None:
        """The turn's answer, from its sample, joins the history; the sample's tags say what kind
        of answer it was when it carried no text (``answer``), why the conversation ended early
        (``end_note``) and why tool calls failed (``tool_errors``)."""
        kind = answer_kind(sample)
        if kind:
            sample.tags["answer"] = kind
        self.tool_errors = []
        if not sample.ok and context_refusal(sample.error):
            left = max(self.turns - self.turn, 0)
            sample.tags["end_note"] = self.end(
                f"the server refused turn {self.turn} for its context ({safe_text(sample.error or '', 160)})"
            ) + (f"; {left} later turn(s) not sent" if left else "")
            if left:
                sample.tags["turns_not_sent"] = left
            return
        if sample.tool_calls_dropped:
            note: str | None = self.end(f"the answer made more than {MAX_CALLS} tool calls")
            self.tool_errors = [
                f"more than {MAX_CALLS} tool calls in one answer ({sample.tool_calls_dropped} not kept)"
            ]
        else:
            note = self.answered(sample.text, sample.tool_calls, sample.text_cut)
        if note is None and self.turn >= self.turns and self.asks_more():
            note = (
                f"the server still asked for a tool at turn {self.turn}, the last --turns allows: "
                "the session ends"
            )
        if note:
            sample.tags["end_note"] = note
        if self.tool_errors:
            sample.tags["tool_failures"] = len(self.tool_errors)
            sample.tags["tool_errors"] = self.tool_errors[:4]  # the first reasons, not every one

    def next_request(self) -> Request | None:
        if self.turn >= self.turns:
            return None
        self.turn += 1
        tags: dict = {"conversation": self.number, "turn": self.turn}
        tags.update(self.next_message())
        out = None
        if self.plan.output_tokens is not None:
            out = self.plan.output_tokens.draw(self.rng)
            tags["output_tokens_asked"] = out
        return Request([dict(m) for m in self.history], out, out is not None, tags)

    def next_message(self) -> dict:
        """Add the turn's new user message to the history; the tags it gives its sample."""
        if self.script:
            self.add({"role": "user", "content": self.script[self.turn - 1]})
            return {}
        n = self.plan.message_tokens.draw(self.rng)
        self.add({"role": "user", "content": words_text(n, self.words)})
        return {"input_tokens_asked": n}

    def answered(self, text: str, tool_calls: list[dict] | None = None, cut: int = 0) -> str | None:
        """The answer of the turn just sent joins the history (an empty one too: a turn was had),
        or, past the history's bound, ends the conversation: the note why (None: it joined)."""
        note = self.fits(len(text), cut)
        if note is None:
            self.add({"role": "assistant", "content": text})
        return note


def message_chars(message: dict) -> int:
    """The characters of a message's text: its content and its tool calls' names and arguments."""
    out = len(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        out += len(call["function"]["name"]) + len(call["function"]["arguments"])
    return out


def answer_kind(sample: Sample) -> str | None:
    """What an answer without text was: ``failed`` (its error says why), ``reasoning-only`` (it
    thought and said nothing), ``empty``; None for an answer with content or tool calls."""
    if not sample.ok:
        return "failed"
    if sample.text or sample.text_cut or sample.tool_calls:
        return None
    return "reasoning-only" if {"reasoning_content", "reasoning"} & set(sample.fields) else "empty"


def tool_problem(call: dict, offered: set[str]) -> str | None:
    """Why a tool call cannot be run: a function the request never offered, or arguments that are
    no JSON object (None: it can)."""
    if call["name"] not in offered:
        return f"unknown function {safe_text(call['name'], 60)!r}: not among the {len(offered)} tools offered"
    try:
        args = json.loads(call["arguments"] or "{}")
    except (ValueError, RecursionError):
        return f"{call['name']}: arguments are not JSON ({safe_text(call['arguments'], 40)!r})"
    return None if isinstance(args, dict) else f"{call['name']}: arguments are JSON but not an object"


def lab_tools() -> list[dict]:
    """The labs' preamble tools as OpenAI tool schemas (each argument's type from its description)."""
    kinds = {"string": "string", "integer": "integer", "boolean": "boolean"}
    out = []
    for name, purpose, arguments in LAB_TOOLS:
        props = {
            arg: {"type": kinds.get(text.split(":")[0], "string"), "description": text}
            for arg, text in arguments.items()
        }
        schema = {"type": "object", "properties": props, "required": list(arguments)[:1]}
        out.append(
            {"type": "function", "function": {"name": name, "description": purpose, "parameters": schema}}
        )
    return out


def tool_result(call: dict, rng: random.Random) -> str:
    """A made-up but plausible result for a tool call: a small JSON object naming the tool."""
    value = round(rng.uniform(0.1, 0.9), 3)
    return json.dumps(
        {"tool": call.get("name") or "tool", "ok": True, "value": value, "note": words_text(12, rng)}
    )


class AgentSession(Conversation):
    """The agent loop: the labs' long preamble as the system prompt and its tools on every
    request (the same for every session: a prefix every engine can share), a task from the labs'
    questions, then turn after turn: a tool call is answered by a tool result, a text answer by
    the user's next message. An engine that never calls a tool runs it as plain turns (its samples
    say ``step`` ``user`` throughout; the record counts the turns that called one)."""

    def __init__(
        self, plan: ConversationPlan, number: int, rng: random.Random, words: random.Random | None = None
    ) -> None:
        super().__init__(plan, number, rng, words)
        self.history, self.chars = [], 0
        self.add({"role": "system", "content": PREAMBLE})
        self.pending: list[dict] = []  # the last answer's tool calls, to answer before the next turn
        self.tools = lab_tools()
        self.offered = {tool["function"]["name"] for tool in self.tools}

    def next_request(self) -> Request | None:
        job = super().next_request()
        if job is not None:
            job.extra = {"tools": self.tools, "tool_choice": "auto"}
        return job

    def next_message(self) -> dict:
        if self.pending:
            for call in self.pending:
                problem = tool_problem(call, self.offered)
                result = (
                    tool_result(call, self.words)
                    if problem is None
                    else json.dumps({"ok": False, "error": problem})
                )
                self.add({"role": "tool", "tool_call_id": call["id"], "content": result})
            self.pending = []
            return {"step": "tool-result"}
        if self.turn == 1:
            text = f"Task {self.number}: {QUESTIONS[(self.number - 1) % len(QUESTIONS)]}"
        else:
            text = words_text(self.plan.message_tokens.draw(self.rng), self.words)
        self.add({"role": "user", "content": text})
        return {"step": "user"}

    def asks_more(self) -> bool:
        return bool(self.pending)

    def next_message_chars(self) -> int:
        if self.pending:  # the tool results: a small JSON object each
            return TOOL_RESULT_CHARS * len(self.pending)
        return super().next_message_chars()

    def answered(self, text: str, tool_calls: list[dict] | None = None, cut: int = 0) -> str | None:
        calls = [c for c in tool_calls or [] if c.get("name")]
        if not calls:
            return super().answered(text, cut=cut)
        self.pending = calls  # counted by fits(): the results the next turn would send
        note = self.fits(len(text) + sum(len(c["name"]) + len(c["arguments"]) for c in calls), cut)
        if note is not None:
            self.pending = []
            return note
        self.tool_errors = [p for p in (tool_problem(c, self.offered) for c in calls) if p]
        for i, call in enumerate(calls):
            call["id"] = call.get("id") or f"call_{self.number}_{self.turn}_{i}"
        self.add(
            {
                "role": "assistant",
                "content": text or None,
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"] or "{}"},
                    }
                    for c in calls
                ],
            }
        )
        return None
