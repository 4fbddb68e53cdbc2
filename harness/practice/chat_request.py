"""Reading and checking a chat-completions request: each check raises ``Rejected`` with the status,
message and error type the server answers with (the engine's own wording, by dialect)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from harness.practice.faults import Faults
from harness.practice.http import Request


class Rejected(Exception):
    """A request the server refuses: ``PracticeApp._error`` renders it in the profile's dialect."""

    def __init__(self, status: int, message: str, kind: str, **extra) -> None:
        super().__init__(message)
        self.status, self.message, self.kind, self.extra = status, message, kind, extra


@dataclass
class ChatCall:
    """A request that passed every check: what scheduling it needs."""

    body: dict
    prompt: list[int]
    max_tokens: int | None
    faults: Faults


def parse_body(req: Request) -> dict:
    try:
        body = req.json()
    except (ValueError, UnicodeDecodeError) as exc:
        raise Rejected(400, f"request body is not valid JSON: {exc}", "invalid_request_error") from exc
    except RecursionError:
        raise Rejected(400, "request body is nested too deeply to read", "invalid_request_error") from None
    if not isinstance(body, dict):
        raise Rejected(400, "request body must be a JSON object", "invalid_request_error")
    where = lone_surrogate(body)
    if where is not None:
        raise Rejected(
            400,
            f"'{where}' holds a lone surrogate (a \\ud800-\\udfff escape that is not half of a pair), "
            "which is no Unicode text; send whole characters",
            "invalid_request_error",
            param=where,
        )
    check_fields(body)
    return body


_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads pairs valid escapes: what is left is lone


def lone_surrogate(value) -> str | None:
    """The place (``messages[0].content``) of the first string, or key, holding a lone surrogate
    in a decoded JSON body, or None: such text cannot be encoded, tokenised or echoed (it answered
    500 UnicodeEncodeError). A walk with its own stack: a deep body never recurses."""
    stack = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return where or "(top level)"
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(item))))
        elif isinstance(item, dict):
            for key in item:
                if _SURROGATE.search(key):
                    return f"{where} (a key)" if where else "(a key)"
            pairs = [(f"{where}.{k}" if where else k, v) for k, v in item.items()]
            stack.extend(reversed(pairs))
    return None


_NUMBER = (int, float)
# field -> (the JSON types it may hold, how the error names them); absent or null is always fine
FIELD_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "model": ((str,), "a string"),
    "stream": ((bool,), "true or false"),
    "stream_options": ((dict,), "an object"),
    "temperature": (_NUMBER, "a number"),
    "top_p": (_NUMBER, "a number"),
    "seed": ((int,), "an integer"),
    "n": ((int,), "an integer"),
    "ignore_eos": ((bool,), "true or false"),
    "stop": ((str, list), "a string or a list of strings"),
    "tools": ((list,), "a list of tool objects"),
    "tool_choice": ((str, dict), "a string or an object"),
    "response_format": ((dict,), "an object"),
    "chat_template_kwargs": ((dict,), "an object"),
}


def _wrong(field: str, kind: str) -> Rejected:
    return Rejected(400, f"'{field}' must be {kind}", "invalid_request_error", param=field)


def _is(value, types: tuple[type, ...]) -> bool:
    """A JSON value of one of ``types`` (a boolean is no number here, nor are the NaN and Infinity
    that Python's parser takes: JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return isinstance(value, types) and (bool in types or not isinstance(value, bool))


# Complexity allowed: one flat list of field checks, each naming its field.
def check_fields(body: dict) -> None:  # noqa: C901
    """Every field the server reads has the JSON type it reads it as: Rejected 400 naming the
    field otherwise (never a TypeError deep in the reply). ``n`` other than 1 is refused: the
    practice server makes one choice per request."""
    for name, (types, kind) in FIELD_TYPES.items():
        value = body.get(name)
        if value is not None and not _is(value, types):
            raise _wrong(name, kind)
    if body.get("n") not in (None, 1):
        raise Rejected(400, "'n' must be 1: the practice server makes one choice", "invalid_request_error")
    options = body.get("stream_options") or {}
    if options.get("include_usage") is not None and not isinstance(options["include_usage"], bool):
        raise _wrong("stream_options.include_usage", "true or false")
    for i, tool in enumerate(body.get("tools") or []):
        fn = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(fn, dict):
            raise _wrong(f"tools[{i}].function", "an object")
        if fn.get("name") is not None and not isinstance(fn["name"], str):
            raise _wrong(f"tools[{i}].function.name", "a string")
        if fn.get("parameters") is not None and not isinstance(fn["parameters"], dict):
            raise _wrong(f"tools[{i}].function.parameters", "an object")
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and not isinstance(choice.get("function") or {}, dict):
        raise _wrong("tool_choice.function", "an object")
    fmt = body.get("response_format") or {}
    if fmt.get("type") is not None and not isinstance(fmt["type"], str):
        raise _wrong("response_format.type", "a string")
    spec = fmt.get("json_schema")
    if spec is not None and not isinstance(spec, dict):
        raise _wrong("response_format.json_schema", "an object")
    if isinstance(spec, dict) and spec.get("schema") is not None and not isinstance(spec["schema"], dict):
        raise _wrong("response_format.json_schema.schema", "an object")
    if isinstance(body.get("stop"), list) and not all(isinstance(x, str) for x in body["stop"]):
        raise _wrong("stop", "a string or a list of strings")


def messages_of(body: dict) -> list:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise Rejected(
            400,
            "'messages' is required: a non-empty list of {role, content} objects",
            "invalid_request_error",
        )
    for i, m in enumerate(messages):
        if m.get("role") is not None and not isinstance(m["role"], str):
            raise _wrong(f"messages[{i}].role", "a string")
        content = m.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise _wrong(f"messages[{i}].content", "a string or a list of content parts")
        for j, part in enumerate(content if isinstance(content, list) else []):
            if not isinstance(part, dict) or not isinstance(part.get("text", ""), str):
                raise _wrong(f"messages[{i}].content[{j}]", "an object with a string 'text'")
    return messages


def prompt_of(body: dict) -> str:
    """A text completion's ``prompt``: one non-empty string (no list of prompts, no token ids)."""
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        raise Rejected(400, "'prompt' is required: a non-empty string", "invalid_request_error")
    return prompt


CHARS_PER_TOKEN = 8  # the practice tokeniser makes at least one token of every 7 non-space characters


def check_size(mode: str, ctx: int, messages: list, tools: list | None) -> None:
    """Refuse, before tokenising, a prompt far too long for the context (a 10 MB prompt would block
    the event loop for seconds): more than ``CHARS_PER_TOKEN`` characters per token of context."""
    chars = sum(len(_text(m.get("content"))) for m in messages) + len(str(tools or ""))
    limit = CHARS_PER_TOKEN * ctx + 1024
    if chars > limit:
        raise Rejected(
            400,
            f"the messages hold {chars} characters, more than any prompt that fits the context of "
            f"{ctx} tokens ({limit} characters at most); shorten them",
            "exceed_context_size_error" if mode == "llama" else "BadRequestError",
        )


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def unknown_model(model: str, mode: str) -> Rejected:
    return Rejected(
        404,
        f"The model `{model}` does not exist.",
        "NotFoundError" if mode == "vllm" else "not_found_error",
    )


def max_tokens_of(body: dict) -> int | None:
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is not None and (
        not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1
    ):
        raise Rejected(
            400,
            f"max_tokens must be a positive integer, got {max_tokens!r}",
            "invalid_request_error",
        )
    return max_tokens


def check_context(mode: str, ctx: int, prompt_n: int, max_tokens: int | None) -> None:
    """Refuse a prompt (plus its output budget) that does not fit one seat's context."""
    needed = prompt_n + (max_tokens or 0)
    if not (needed > ctx or prompt_n >= ctx):
        return
    if mode == "llama":
        raise Rejected(
            400,
            f"request ({needed} tokens) exceeds the available context size ({ctx} tokens), try increasing it",
            "exceed_context_size_error",
            n_prompt_tokens=prompt_n,
            n_ctx=ctx,
        )
    raise Rejected(
        400,
        f"This model's maximum context length is {ctx} tokens. However, you requested "
        f"{needed} tokens ({prompt_n} in the messages, {max_tokens or 0} in the "
        f"completion). "
        "Please reduce the length of the messages or completion.",
        "BadRequestError",
    )
