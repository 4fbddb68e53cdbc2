"""Prove the endpoint before loading it: the model is listed, one short
request returns text, a finish reason and a usage block, and the context the server reports fits
the prompts. ``verdict`` is pure; ``observe`` does the three requests."""

from __future__ import annotations

import socket
import ssl
import time
from urllib.parse import urlsplit

from harness.bounds import Bounds
from harness.errors import TargetError
from harness.endpoints.http_client import auth_headers, request, stream_chat
from harness.endpoints.wire import MESSAGE, MODELS, REQUEST
from harness.records.base import SEEN

PROOF_PROMPT = "Answer with one short sentence: what is a token?"


MIN_LEFT_S = 0.05  # less time than this left of the proof's bound: no further request is sent


def _left(deadline: float) -> Bounds | None:
    """The bounds of a request sent now, within ``deadline``; None when no time is left."""
    left = deadline - time.monotonic()
    return Bounds.of(left) if left >= MIN_LEFT_S else None


def server_context(base_url: str, model: str, headers: dict, timeout: float = 10.0) -> int | None:
    """Context per sequence as the server states it: llama-server's /props (n_ctx per slot), else
    vLLM's max_model_len in /v1/models; None when neither says (or either is slow or broken). Both
    requests together end within ``timeout`` (a server that floods its answers is cut there)."""
    root = base_url.rstrip("/").removesuffix("/v1")
    deadline = time.monotonic() + timeout
    try:
        for url in (root + "/props", base_url.rstrip("/") + "/models"):
            bounds = _left(deadline)
            if bounds is None:
                return None
            r = request("GET", url, bounds, headers=headers, verify=False)
            n = _stated_context(r.json(), model) if r.status == 200 else None
            if n:
                return n
    except (TargetError, ValueError, AttributeError, TypeError, RecursionError):
        return None
    return None


def _stated_context(body: object, model: str) -> int | None:
    """n_ctx of a /props answer, or the model's max_model_len in a /models answer (None: neither)."""
    if not isinstance(body, dict):
        return None
    settings = body.get("default_generation_settings")
    n = settings.get("n_ctx") if isinstance(settings, dict) else None
    if isinstance(n, int) and not isinstance(n, bool) and n > 0:
        return n
    data = body.get(MODELS.data)
    for m in data if isinstance(data, list) else []:
        if isinstance(m, dict) and m.get(MODELS.id) == model and isinstance(m.get("max_model_len"), int):
            return m["max_model_len"] if m["max_model_len"] > 0 else None
    return None


def observe(
    base_url: str,
    model: str,
    listed: list[str],
    api_key: str | None,
    timeout: float = 120.0,
    idle_timeout: float | None = None,
    endpoint: str | None = None,
) -> dict:
    """The proof request, sent to the same URL with the same headers as the load
    (``harness.endpoints.http_client.chat_url`` and ``chat_headers``), of the load's endpoint kind (None:
    streamed chat), under the same bounds. The whole proof
    (its tries and the context requests) ends within ``timeout``: a server that floods or trickles
    is cut at that bound, never kept reading past it."""
    deadline = time.monotonic() + timeout
    headers = auth_headers(api_key)
    body = {
        REQUEST.model: model,
        REQUEST.messages: [{MESSAGE.role: "user", MESSAGE.content: PROOF_PROMPT}],
        REQUEST.max_tokens: 32,
        REQUEST.temperature: 0,
    }
    for attempt in range(3):  # a transient 429/5xx is not a broken endpoint; three in a row is
        left = timeout if not attempt else round(deadline - time.monotonic(), 3)
        if left < MIN_LEFT_S:
            break  # the bound is spent: the last try's answer is the proof's
        idle = None if idle_timeout is None else min(idle_timeout, left)
        # Certificates are not verified, as by the load client: local endpoints often use self-signed ones.
        s = stream_chat(
            base_url, body, api_key=api_key, timeout=left, idle_timeout=idle, verify=False, endpoint=endpoint
        )
        if (s.ok and s.fields and s.finish_reason) or (s.error or "").startswith("Timeout"):
            break  # a timed-out proof is not sent again: the bound stated is the bound kept
    return {
        SEEN.listed_models: listed,
        SEEN.model_listed: (model in listed) if listed else None,
        SEEN.ok: s.ok,
        SEEN.error: s.error,
        SEEN.finish_reason: s.finish_reason,
        SEEN.text_fields: s.fields,
        SEEN.usage: s.token_source == "usage",
        SEEN.prompt_tokens: s.prompt_tokens,
        SEEN.output_tokens: s.output_tokens,
        SEEN.ttft_s: None if s.ttft is None else round(s.ttft, 4),
        SEEN.n_ctx: server_context(base_url, model, headers, min(10.0, deadline - time.monotonic())),
    }


HTML_MARKS = ("<!doctype", "<html", "<head", "<body", "<title")


def not_openai(error: str | None) -> str | None:
    """Why a failed proof request means the server is no OpenAI-compatible one (its chat route
    answered 501, or a web page), in one line; None for any other failure."""
    text = (error or "").strip()
    status = text.split(":", 1)[0]
    if status == "HTTP 501":
        why = "its chat route answered HTTP 501 (not implemented)"
    elif any(mark in text.lower() for mark in HTML_MARKS):
        why = f"its chat route answered {status if status.startswith('HTTP') else 'with'} a web page (HTML)"
    else:
        return None
    return (
        f"not an OpenAI-compatible server: {why}; point the URL at the server's OpenAI API "
        "(llama-server, vLLM and the practice server serve it under /v1)"
    )


def verdict(seen: dict, longest_prompt_tokens: int, max_tokens: int) -> list[str]:
    """Warnings to print; raises TargetError when the endpoint cannot carry the sweep."""
    if not seen[SEEN.ok]:
        raise TargetError(
            not_openai(seen[SEEN.error])
            or f"the proof request failed ({seen[SEEN.error]}); fix the endpoint before loading it"
        )
    if not seen[SEEN.text_fields]:
        raise TargetError(
            "the proof request returned no text in content, reasoning or tool calls; check the "
            "model and the chat template"
        )
    if not seen[SEEN.finish_reason]:
        raise TargetError(
            "the proof request's stream ended without a finish reason; the server or a proxy cut it"
        )
    warnings = []
    if seen[SEEN.model_listed] is False:
        warnings.append(
            f"the server lists {', '.join(map(str, seen[SEEN.listed_models]))}, not the model sent"
        )
    if not seen[SEEN.usage]:
        warnings.append("no usage block came back: output tokens will be counted from the stream's chunks")
    n_ctx = seen.get(SEEN.n_ctx)
    if n_ctx and longest_prompt_tokens + max_tokens > n_ctx:
        raise TargetError(
            f"the server's context is {n_ctx} tokens per sequence, and this prompt set needs about "
            f"{longest_prompt_tokens} + {max_tokens} (prompt and output); restart it with more "
            "context per slot, or choose a shorter prompt set or fewer output tokens"
        )
    return warnings


def estimate_tokens(text: str) -> int:
    """About one token per four characters of English text: a prompt set that clearly cannot fit is
    caught here; one that misses by a few tokens is left to the server's own 400."""
    return len(text) // 4 + 1


def _answers_plain_http(host: str, port: int, timeout: float) -> bool:
    """Whether ``host:port`` answers a plain-text HTTP request with an HTTP status line."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(f"GET / HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
            return sock.recv(16).startswith(b"HTTP/")
    except OSError:
        return False


def plain_http_behind_https(base_url: str, timeout: float = 2.0) -> str | None:
    """For an https URL: one line when its port speaks plain HTTP (the TLS handshake gets no TLS
    answer, within ``timeout``, and a plain request gets an HTTP one), else None. Without it such a
    server either garbles the handshake or waits for the rest of it until the request's whole bound."""
    parts = urlsplit(base_url)
    if parts.scheme != "https" or not parts.hostname:
        return None
    host, port = parts.hostname, parts.port or 443
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            context = ssl._create_unverified_context()  # only the handshake is in question here
            with context.wrap_socket(sock, server_hostname=host):
                return None
    except (ssl.SSLError, TimeoutError, socket.timeout, ConnectionResetError):
        pass  # no TLS answer: ask in plain HTTP
    except OSError:
        return None  # refused, unresolvable: the proof says that in its own words
    if not _answers_plain_http(host, port, timeout):
        return None
    plain = parts._replace(scheme="http").geturl()
    return f"{base_url} names TLS, but {host}:{port} speaks plain HTTP (no TLS handshake); use {plain}"
