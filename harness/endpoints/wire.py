"""The keys of the OpenAI-compatible wire format, declared once: what a request body carries and
what an answer (streamed event, whole body, error, model list) carries. The endpoint kinds build
and read bodies with these names, the practice server speaks them, and scripts/measure_shape.py
reads them here to tell a wire key from a record field of the same spelling."""

from __future__ import annotations

from harness.schema_facts import KeyNames

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


class WireKeys(KeyNames):
    """Wire keys as attributes: ``REQUEST.max_tokens`` is ``"max_tokens"``. A misspelt one fails
    where it is used, so a body and its reader cannot drift apart."""

    what = "wire key"


# A request body: /v1/chat/completions and /v1/completions, with the engines' own extensions.
REQUEST = WireKeys(
    "model",
    "messages",
    "prompt",
    "stream",
    "stream_options",
    "include_usage",
    "max_tokens",
    "max_completion_tokens",
    "min_tokens",
    "ignore_eos",
    "temperature",
    "top_p",
    "seed",
    "n",
    "stop",
    "logprobs",
    "tools",
    "tool_choice",
    "response_format",
    "json_schema",
    "chat_template_kwargs",
    "enable_thinking",
)
# A chat message, a part of its content and a tool call in it (sent in ``messages``, received in
# ``message`` or ``delta``; a streamed call's pieces carry its ``index``).
MESSAGE = WireKeys(
    "role", "content", "text", "name", "tool_calls", "id", "index", "type", "function", "arguments"
)
# An answer: a streamed event or a whole body, its choices, usage, llama.cpp's timings, an error.
ANSWER = WireKeys(
    "id",
    "object",
    "created",
    "model",
    "choices",
    "index",
    "delta",
    "message",
    "text",
    "content",
    "reasoning_content",
    "reasoning",
    "tool_calls",
    "finish_reason",
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "prompt_tokens_details",
    "cached_tokens",
    "timings",
    "cache_n",
    "prompt_n",
    "prompt_ms",
    "predicted_n",
    "predicted_ms",
    "error",
    "code",
    "type",
)
# GET /v1/models: the list of served models.
MODELS = WireKeys("object", "data", "id", "owned_by", "created")
