"""Feature probes: what a server really delivers, judged from its replies. Pure functions: a
reply (already parsed JSON) in, a verdict with the exact reason out."""

from __future__ import annotations

import json
import re

import jsonschema

from harness.records.base import FEATURES_LAB  # noqa: F401  (re-exported: defined with the records)
from harness.records.engine import VERDICT

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

TOOL_NAME = "get_current_weather"
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "Current weather conditions for one city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "the city, e.g. Porto"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
PERSON_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "born": {"type": "integer"}, "field": {"type": "string"}},
    "required": ["name", "born", "field"],
    "additionalProperties": False,
}
# Neither prompt mentions JSON, tools by name, or field names: the server has to do the work.
TOOL_PROMPT = "How is the weather in Lisbon at the moment? Please check with the tool."
PERSON_PROMPT = "Tell me about one physicist who was awarded the Nobel Prize."
_EMPTY_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)


def _dict(value: object) -> dict:
    """``value`` when it is a JSON object, else {} (a server may send any type anywhere)."""
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list:
    """``value`` when it is a JSON array, else [] (``"choices": {...}`` is no list of choices)."""
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    """``value`` when it is a string, else None."""
    return value if isinstance(value, str) else None


def _message(reply: dict) -> tuple[dict, str | None]:
    """The first choice's message and finish reason ({} and None when the reply has no choice)."""
    choices = _list(_dict(reply).get("choices"))
    first = _dict(choices[0]) if choices else {}
    return _dict(first.get("message")), _str(first.get("finish_reason"))


def _reasoning_field(message: dict) -> str | None:
    return next((k for k in ("reasoning_content", "reasoning") if message.get(k)), None)


def judge_tool_call(name: str | None, arguments: object, text: str, finish: str | None) -> dict:
    """Supported only when a tool call names the weather function with a string ``city``."""
    out: dict[str, object] = {
        VERDICT.supported: False,
        "called": name,
        "arguments": None,
        "finish_reason": finish,
    }
    if name is None:
        if "<tool_call>" in (text or ""):
            out[VERDICT.detail] = (
                "the model wrote a <tool_call> block as text; the server did not parse it (server finding)"
            )
        elif finish == "length":
            out[VERDICT.detail] = "the token budget ran out before any tool call (finish_reason length)"
        else:
            out[VERDICT.detail] = "replied without tool_calls: " + (text or "").strip()[:80]
        return out
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except (ValueError, RecursionError):
        out[VERDICT.detail] = "tool_calls came back but their arguments are not valid JSON"
        return out
    out["arguments"] = args
    if name == TOOL_NAME and isinstance(args, dict) and isinstance(args.get("city"), str):
        out[VERDICT.supported] = True
    else:
        out[VERDICT.detail] = f"tool_calls came back, but not {TOOL_NAME} with a city string"
    return out


def judge_tool_reply(reply: dict) -> dict:
    message, finish = _message(reply)
    calls = _list(message.get("tool_calls"))
    fn = _dict(_dict(calls[0]).get("function")) if calls else {}
    name = _str(fn.get("name")) if calls else None
    out = judge_tool_call(name, fn.get("arguments"), _str(message.get("content")) or "", finish)
    out["reasoning_field"] = _reasoning_field(message)
    return out


def judge_schema_reply(reply: dict, schema: dict = PERSON_SCHEMA) -> dict:
    """Supported only when the content (after an empty think block, if any) validates against the schema."""
    message, finish = _message(reply)
    content = _str(message.get("content")) or ""
    stripped = _EMPTY_THINK.sub("", content, count=1)
    out = {
        VERDICT.supported: False,
        "value": None,
        "think_block_removed": stripped != content,
        "finish_reason": finish,
        "reasoning_field": _reasoning_field(message),
    }
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        out[VERDICT.detail] = "the request was accepted but the reply is not JSON: " + stripped.strip()[:80]
        return out
    out["value"] = value
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(value), key=lambda e: list(e.path))
    if errors:
        out[VERDICT.detail] = "JSON that does not match the schema: " + "; ".join(
            e.message for e in errors[:3]
        )
    else:
        out[VERDICT.supported] = True
    return out


def assemble_tool_deltas(events: list[dict]) -> tuple[str | None, str, str, str | None]:
    """(function name, arguments, content text, finish reason) from streamed chunks."""
    name: str | None = None
    args, text, finish = "", "", None
    for event in events:
        for choice in _list(_dict(event).get("choices")):
            choice = _dict(choice)
            delta = _dict(choice.get("delta"))
            text += _str(delta.get("content")) or ""
            for call in _list(delta.get("tool_calls")):
                fn = _dict(_dict(call).get("function"))
                name = name or _str(fn.get("name"))
                args += _str(fn.get("arguments")) or ""
            finish = _str(choice.get("finish_reason")) or finish
    return name, args, text, finish


RAW_LIMIT = 4096  # a failed probe keeps the server's reply up to this many characters


def raw_excerpt(raw: bytes | str, limit: int = RAW_LIMIT) -> str:
    """The server's raw reply as the record keeps it: decoded, whole when short, else its first
    ``limit`` characters and how much was cut."""
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    if len(text) <= limit:
        return text
    return text[:limit] + f"... ({len(text) - limit:,} more characters cut)"
