"""What the practice server says: a plan of output tokens, decided before the first one is sent.

Pure functions of the request, the profile and a seeded generator. A plan is a list of
``(field, text)`` pieces, one per output token, where field is ``reasoning``, ``content`` or
``tool_args`` (the first ``tool_args`` piece opens the call), plus the finish reason.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass

from harness.practice.tokenizer import pieces

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

_PROSE = (
    "the server keeps a seat for each conversation and writes one token per step while the "
    "batch shares every pass over the weights so a second person costs far less than the first "
    "until the seats fill and newcomers wait in line for a place memory bandwidth sets the pace "
    "of decoding and the cache holds what each prompt already said"
)
_WORDS = _PROSE.split()
_THINKING = "let me think about what is being asked and answer briefly"
_THOUGHT = _THINKING.split()
_CITIES = ["Paris", "Lisbon", "Oslo", "Nairobi", "Osaka", "Lima"]


@dataclass(frozen=True)
class ReplyPlan:
    pieces: list[tuple[str, str]]
    finish_reason: str
    tool_name: str | None = None
    tool_arguments: str | None = None


def answer_text(plan: ReplyPlan) -> str:
    """The answer's visible text, as a client sends it back in the next turn's history."""
    return "".join(text for name, text in plan.pieces if name == "content")


def output_length(spec: dict, rng: random.Random) -> int:
    kind = spec["kind"]
    if kind == "fixed":
        return int(spec.get("tokens", 256))
    if kind == "uniform":
        return rng.randint(int(spec.get("low", 1)), int(spec.get("high", 512)))
    median = float(spec.get("median", 200))
    sigma = float(spec.get("sigma", 0.5))
    return max(1, int(round(math.exp(math.log(median) + sigma * rng.gauss(0.0, 1.0)))))


MAX_EXAMPLE_ITEMS = 64  # an array's example holds at most this many items (minItems: 3000000 is not built)
MAX_EXAMPLE_DEPTH = 32  # deeper schemas get null there
MAX_EXAMPLE_CHARS = 4096  # a string example's length at most (minLength alike)
MAX_EXAMPLE_NODES = 2000  # values in one example in all (nested arrays multiply otherwise)


def _whole(schema: dict, key: str, default: int, cap: int) -> int:
    """A schema's whole-number keyword, within [0, cap]; ``default`` when it is no whole number."""
    value = schema.get(key, default)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
        value = default
    return int(min(max(value, 0), cap))


def example_for(schema: dict, name: str = "", depth: int = 0, budget: list[int] | None = None) -> object:
    """A value that satisfies a JSON Schema of the kinds chat APIs use for tools and replies, within
    bounds (``MAX_EXAMPLE_*``): a hostile schema gets a smaller example, never a frozen server."""
    budget = [MAX_EXAMPLE_NODES] if budget is None else budget
    budget[0] -= 1
    if not isinstance(schema, dict) or depth > MAX_EXAMPLE_DEPTH or budget[0] < 0:
        return None
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for combo in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(combo), list) and schema[combo]:
            return example_for(schema[combo][0], name, depth + 1, budget)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        return {str(k): example_for(sub, str(k), depth + 1, budget) for k, sub in list(props.items())[:256]}
    if kind == "array":
        count = max(1, _whole(schema, "minItems", 1, MAX_EXAMPLE_ITEMS))
        return [example_for(schema.get("items", {}), name, depth + 1, budget) for _ in range(count)]
    return _scalar_example(kind, schema, name)


def _scalar_example(kind: object, schema: dict, name: str) -> object:
    """A number, boolean, null or string for ``schema``; strings are chosen by the field's name."""
    low = schema.get("minimum")
    low = low if isinstance(low, (int, float)) and not isinstance(low, bool) and abs(low) < 1e15 else None
    if kind == "integer":
        return int(low) if low is not None else 3
    if kind == "number":
        return float(low) if low is not None else 21.5
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    lowered = name.lower()
    if "city" in lowered or "location" in lowered:
        return _CITIES[len(name) % len(_CITIES)]
    if "unit" in lowered:
        return "celsius"
    text = "example"
    min_len = _whole(schema, "minLength", 0, MAX_EXAMPLE_CHARS)
    return (text * (1 + min_len // len(text)))[: max(min_len, len(text))]


def _prose(n: int, rng: random.Random) -> list[str]:
    start = rng.randrange(len(_WORDS))
    out = []
    for i in range(n):
        word = _WORDS[(start + i) % len(_WORDS)]
        out.append(word.capitalize() if i == 0 else " " + word)
    return out


def _thinking(n: int) -> list[str]:
    return [(" " if i else "") + _THOUGHT[i % len(_THOUGHT)] for i in range(n)]


def _tool_choice_name(request: dict) -> str | None:
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        return (choice.get("function") or {}).get("name")
    return None


def plan_reply(request: dict, profile: dict, rng: random.Random, max_tokens: int) -> ReplyPlan:
    """Decide every output token of one reply, capped at ``max_tokens``."""
    out_spec = profile["output"]
    thinking_enabled = (request.get("chat_template_kwargs") or {}).get("enable_thinking", True)
    think = int(out_spec.get("thinking_tokens", 0)) if thinking_enabled else 0
    plan: list[tuple[str, str]] = [("reasoning", t) for t in _thinking(think)]
    tools = request.get("tools") or []
    fmt = request.get("response_format") or {}
    finish = "stop"
    tool_name = tool_args = None
    prose = False

    if tools and request.get("tool_choice") != "none":
        tool_name = _tool_choice_name(request) or str(tools[0].get("function", {}).get("name", "tool"))
        params = next(
            (
                t["function"].get("parameters", {})
                for t in tools
                if t.get("function", {}).get("name") == tool_name
            ),
            {},
        )
        tool_args = json.dumps(example_for(params))
        if profile["features"]["tool_parser"]:
            plan += [("tool_args", p) for p in pieces(tool_args)]
            finish = "tool_calls"
        else:
            block = (
                "<tool_call>\n"
                + json.dumps({"name": tool_name, "arguments": json.loads(tool_args)})
                + "\n</tool_call>"
            )
            plan += [("content", p) for p in pieces(block)]
    elif fmt.get("type") == "json_schema" and profile["features"]["json_schema"]:
        schema = (fmt.get("json_schema") or {}).get("schema", {})
        plan += [("content", p) for p in pieces(json.dumps(example_for(schema)))]
    elif fmt.get("type") == "json_object" and profile["features"]["json_schema"]:
        plan += [("content", p) for p in pieces(json.dumps({"answer": "example"}))]
    else:
        prose = True
        # ignore_eos (vLLM's and llama-server's extension, what `vllm bench serve --ignore-eos` sends):
        # the reply runs to max_tokens whatever the length distribution says.
        length = max_tokens + 1 if request.get("ignore_eos") else output_length(out_spec["length"], rng)
        # min_tokens (vLLM's extension): no end of the answer before that many tokens
        floor = request.get("min_tokens")
        if isinstance(floor, int) and not isinstance(floor, bool) and floor > length:
            length = min(floor, max_tokens + 1)
        plan += [("content", p) for p in _prose(length, rng)]

    # A reply that reaches max_tokens stops on length (a prose reply that lands exactly on it too).
    if len(plan) > max_tokens or (len(plan) == max_tokens and prose):
        plan, finish = plan[:max_tokens], "length"
    return ReplyPlan(plan, finish, tool_name, tool_args)
