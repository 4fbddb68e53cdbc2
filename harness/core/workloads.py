"""Workloads beyond the labs' prompt sets, pure: length distributions, prompts of a stated length,
conversations and what each request of one carries. No I/O, no clocks; every draw comes from a
``random.Random`` the caller seeds.

Length distributions (``fixed:N``, ``uniform:LO-HI``, ``normal:MEAN,SD``, ``file:PATH``) are
``harness.core.lengths``, re-exported here.

A prompt of N tokens is N words drawn from a list of short, common English words, each of which
is one token with its leading space in the BPE vocabularies of the usual open models (Llama,
Qwen, Gemma) and in the practice server's tokeniser; the server's own ``usage.prompt_tokens`` is
what the record keeps as sent.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from harness.core.lengths import Lengths, file_counts, parse_lengths  # noqa: F401  (re-exported)
from harness.core.prompts import LAB_TOOLS, PREAMBLE, QUESTIONS

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


def words_text(count: int, rng: random.Random) -> str:
    """``count`` words from ``WORDS``: about ``count`` tokens on the usual vocabularies."""
    return " ".join(rng.choice(WORDS) for _ in range(count))


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


def largest_request(max_tokens: int, lengths=None, conversations=None, trace=None) -> int | None:
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
    return first + (plan.output_tokens.largest() if plan.output_tokens is not None else max_tokens)


SYSTEM_PROMPT = "You are a helpful assistant. Keep every answer short and plain."


@dataclass(frozen=True)
class ConversationPlan:
    """Conversations: each holds ``turns`` turns (a distribution), each turn sends the whole
    history (system prompt, every earlier message and answer) plus a new user message of
    ``message_tokens`` tokens, after ``think_s`` seconds of the user's own time."""

    turns: Lengths
    message_tokens: Lengths
    think_s: float = 0.0
    output_tokens: Lengths | None = None
    # a conversation file's user messages (harness.core.sharegpt): conversation n takes the
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
        self.history: list[dict] = [{"role": "system", "content": f"{opening} {SYSTEM_PROMPT}"}]

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
            self.history.append({"role": "user", "content": self.script[self.turn - 1]})
            return {}
        n = self.plan.message_tokens.draw(self.rng)
        self.history.append({"role": "user", "content": words_text(n, self.words)})
        return {"input_tokens_asked": n}

    def answered(self, text: str, tool_calls: list[dict] | None = None) -> None:
        """The answer of the turn just sent joins the history (an empty one too: a turn was had)."""
        self.history.append({"role": "assistant", "content": text})


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
        self.history = [{"role": "system", "content": PREAMBLE}]
        self.pending: list[dict] = []  # the last answer's tool calls, to answer before the next turn
        self.tools = lab_tools()

    def next_request(self) -> Request | None:
        job = super().next_request()
        if job is not None:
            job.extra = {"tools": self.tools, "tool_choice": "auto"}
        return job

    def next_message(self) -> dict:
        if self.pending:
            for call in self.pending:
                self.history.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": tool_result(call, self.words)}
                )
            self.pending = []
            return {"step": "tool-result"}
        if self.turn == 1:
            text = f"Task {self.number}: {QUESTIONS[(self.number - 1) % len(QUESTIONS)]}"
        else:
            text = words_text(self.plan.message_tokens.draw(self.rng), self.words)
        self.history.append({"role": "user", "content": text})
        return {"step": "user"}

    def answered(self, text: str, tool_calls: list[dict] | None = None) -> None:
        calls = [c for c in tool_calls or [] if c.get("name")]
        if not calls:
            super().answered(text)
            return
        for i, call in enumerate(calls):
            call["id"] = call.get("id") or f"call_{self.number}_{self.turn}_{i}"
        self.history.append(
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
        self.pending = calls
