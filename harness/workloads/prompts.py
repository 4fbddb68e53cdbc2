"""Prompt sets for the load generator, with the lab's semantics (our own texts).

``mixed``          short, different questions, each behind a random tag, so a prompt that comes
                   round again (in this run or an earlier one) is never a cache hit.
``shared-prefix``  one long preamble (a system prompt with tool schemas, about 1,400 tokens),
                   then one of eight questions: everything before the question is identical in
                   every request, so a prefix cache can reuse it.
``unique-prefix``  the control for shared-prefix: the same text with a random tag as its first
                   line, so nothing after the chat template's opening tokens can be reused.
``long``           the preamble plus a question, tagged first: long prompts with no reuse, for
                   prefill-heavy load.
``mixed-long``     every fourth request from ``long``, the rest from ``mixed``.

Tags are random per request (``secrets``), so they differ between runs as well.
"""

from __future__ import annotations

import json
import secrets

from harness.errors import ConfigError

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

PROMPT_SETS = ("mixed", "shared-prefix", "unique-prefix", "long", "mixed-long")

_TOOLS = [
    (
        "gauge_read",
        "Fetch one server's /metrics page and return the samples whose metric name matches a regular "
        "expression.",
        {"target": "string: server name as listed in the inventory", "match": "string: regular expression"},
    ),
    (
        "log_tail",
        "Show the newest lines of a server log, optionally keeping only one severity.",
        {"target": "string", "count": "integer: 1 to 400", "severity": "string: debug, info, warn or error"},
    ),
    (
        "service_bounce",
        "Restart one serving process with its saved flags; refuses while requests are in flight unless "
        "forced.",
        {"target": "string", "forced": "boolean"},
    ),
    (
        "flag_update",
        "Change one saved launch flag for the next restart and return the value it replaces.",
        {"target": "string", "flag": "string: e.g. parallel or gpu-memory-utilization", "value": "string"},
    ),
    (
        "accelerator_memory",
        "Report accelerator memory in total, in use, and held by the attention cache.",
        {"target": "string"},
    ),
    (
        "model_listing",
        "Return the model identifiers a server advertises, with the context length of each.",
        {"target": "string"},
    ),
    (
        "sweep_start",
        "Run a concurrency sweep against a server and return where its records were written.",
        {
            "target": "string",
            "levels": "array of integers",
            "per_level": "integer",
            "answer_tokens": "integer",
        },
    ),
    (
        "sweep_diff",
        "Set two recorded sweeps side by side, level by level, and return throughput and latency ratios.",
        {"baseline": "string: label", "candidate": "string: label"},
    ),
    ("storage_report", "Report how much disk the model library uses, file by file.", {"folder": "string"}),
    (
        "digest_verify",
        "Hash a model file with SHA-256 and compare it with the digest stored next to it.",
        {"file": "string"},
    ),
    (
        "thermal_status",
        "Return temperature, power and any clock throttling the driver reports for one device.",
        {"index": "integer"},
    ),
    (
        "incident_file",
        "Open an incident with a headline, a priority and the evidence so far.",
        {"headline": "string", "priority": "string: low, normal or urgent", "evidence": "string"},
    ),
    (
        "seat_table",
        "List every slot of a llama-server process: its context, whether it is busy and how many tokens it "
        "holds.",
        {"target": "string"},
    ),
    (
        "queue_watch",
        "Sample running and waiting request counts once a second for a while.",
        {"target": "string", "duration": "integer: seconds, at most 90"},
    ),
    (
        "cache_counters",
        "Return prefix-cache lookups, hits and the hit ratio since the process started.",
        {"target": "string"},
    ),
    (
        "weights_fetch",
        "Copy a model file from a named repository into the library and check its digest.",
        {"repository": "string", "filename": "string"},
    ),
    (
        "weights_remove",
        "Delete a model file once no running server has it open.",
        {"file": "string", "sure": "boolean"},
    ),
    (
        "link_speed",
        "Measure network throughput to another host in the inventory for some seconds.",
        {"peer": "string", "duration": "integer"},
    ),
    (
        "job_schedule",
        "Queue a benchmark for a quiet hour and note it in the notebook when done.",
        {"at": "string: ISO 8601 timestamp", "job": "string"},
    ),
    (
        "notebook_query",
        "Return the notebook records of one lab and label as a table.",
        {"lab": "string", "label": "string"},
    ),
]

LAB_TOOLS = _TOOLS  # (name, purpose, arguments) of the preamble's tools: the agent loop's too


_RULES = [
    "Keep answers under five sentences unless a table is requested.",
    "Every number you state must come from a tool result; say which tool gave it.",
    "Change one thing at a time and say beforehand which outcome would prove you wrong.",
    "Ask before restarting anything that is serving requests.",
    "If memory runs short, lower concurrency or context length before lowering precision.",
    "Give latency as a median together with a high percentile, never a mean on its own.",
]

PREAMBLE = (
    "You assist the people who run a small private inference service: a single open-weight model "
    "behind an OpenAI-style API on one machine. To use a tool, reply with one JSON object that "
    "names the tool and gives its arguments.\n\nRules:\n"
    + "\n".join(f"- {rule}" for rule in _RULES)
    + "\n\nTools:\n"
    + json.dumps([{"tool": n, "purpose": d, "arguments": a} for n, d, a in _TOOLS], indent=2)
)

QUESTIONS = [
    "How much more cache memory does a doubled context take?",
    "Why is reading the prompt quicker per token than writing the answer?",
    "Which figure should I quote to someone who says replies feel sluggish?",
    "What does a waiting-request count that never drops to zero tell me?",
    "Why is the second simultaneous request cheaper than the first?",
    "Should I add slots or lengthen the context, and how do I decide?",
    "What do I check first when the server runs out of memory while loading?",
    "How can an average latency hide a problem?",
]

SHORT = [
    "In three sentences, why does memory bandwidth cap decoding speed?",
    "Write a shell one-liner that prints the size of a folder.",
    "Contrast tensor parallelism with pipeline parallelism briefly.",
    "Give three reasons a model server might fail at startup.",
    "What is a key-value cache and why does it grow during a chat?",
    "Write a Python function computing a list's median without imports.",
    "Name four things a benchmark report needs besides its headline number.",
    "Explain weight quantisation to someone who knows floating point.",
    "Describe continuous batching in everyday words.",
    "List three ways retrieval-augmented generation goes wrong.",
    "Give a regular expression for a YYYY-MM-DD date and explain each part.",
    "Why can a smaller model that fits in memory beat a bigger one that spills?",
    "What should I check before exposing a local API on my home network?",
    "Is a context window the same thing as a context length?",
    "Why can two runs with one seed still differ?",
    "Write a bash loop that retries a command three times, pausing between tries.",
    "What does a large spread between benchmark repeats usually mean?",
    "How does batch size trade against latency for one user?",
    "What does a chat template do, and what breaks without it?",
    "Give three signs a machine is overheating during a benchmark.",
    "What is speculative decoding and when is it useless?",
    "What is the difference between total and active parameters in a mixture of experts?",
    "Write a JSON object describing a computer's chip, memory and operating system.",
    "Why report goodput rather than raw throughput?",
]


def _tag() -> str:
    return f"Request {secrets.token_hex(8)}."


def make_prompts(kind: str, count: int) -> list[str]:
    """``count`` prompts from ``prompt_set``, cycling through its texts."""
    prompt_set = kind
    if prompt_set == "mixed":
        return [f"{_tag()} {SHORT[i % len(SHORT)]}" for i in range(count)]
    if prompt_set == "shared-prefix":
        return [f"{PREAMBLE}\n\nQuestion: {QUESTIONS[i % len(QUESTIONS)]}" for i in range(count)]
    if prompt_set in ("unique-prefix", "long"):
        return [f"{_tag()}\n{PREAMBLE}\n\nQuestion: {QUESTIONS[i % len(QUESTIONS)]}" for i in range(count)]
    if prompt_set == "mixed-long":
        return [make_prompts("long" if i % 4 == 3 else "mixed", 1)[0] for i in range(count)]
    raise ConfigError(
        f"unknown prompt set {prompt_set!r}; use one of {', '.join(PROMPT_SETS)} or --prompt-file"
    )


def prompts_from_jsonl(text: str, source: str, count: int) -> list[str]:
    """Prompts from JSONL text (``source`` names its file in errors): one object per line with
    ``prompt`` (a string) or ``messages`` (its last user message is used), cycled to ``count``."""
    prompts = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source}:{lineno}: not valid JSON ({exc.msg}); one object per line") from exc
        prompt = obj.get("prompt") if isinstance(obj, dict) else None
        if prompt is None and isinstance(obj, dict) and isinstance(obj.get("messages"), list):
            users = [
                m.get("content") for m in obj["messages"] if isinstance(m, dict) and m.get("role") == "user"
            ]
            prompt = users[-1] if users else None
        if not isinstance(prompt, str) or not prompt:
            raise ConfigError(f"{source}:{lineno}: needs a 'prompt' string or 'messages' with a user message")
        prompts.append(prompt)
    if not prompts:
        raise ConfigError(f"--prompt-file {source} holds no prompts")
    return [prompts[i % len(prompts)] for i in range(count)]
