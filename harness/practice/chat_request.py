"""Reading and checking a chat-completions request: each check raises ``Rejected`` with the status,
message and error type the server answers with (the engine's own wording, by dialect)."""

from __future__ import annotations

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
    if not isinstance(body, dict):
        raise Rejected(400, "request body must be a JSON object", "invalid_request_error")
    return body


def messages_of(body: dict) -> list:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise Rejected(
            400,
            "'messages' is required: a non-empty list of {role, content} objects",
            "invalid_request_error",
        )
    return messages


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
