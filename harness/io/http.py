"""The one HTTP helper for OpenAI-style endpoints: the ``Authorization`` header, the model list,
and a plain streaming chat client on ``requests`` (the reference the Locust user is checked
against, and what the tests, the demo and single-user measurements use to talk to a server).
The Locust user streams through Locust's own client for load, with the same parser."""

from __future__ import annotations

import time

import requests

from harness.core.stream import Sample, StreamParser


def auth_headers(api_key: str | None) -> dict[str, str]:
    """The bearer header for an API key, or none; the key itself is never logged or recorded."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def get_models(base_url: str, api_key: str | None, timeout: float = 10.0, verify: bool = True):
    """``GET {base_url}/models`` with the key (raises ``requests.RequestException`` on no answer)."""
    return requests.get(
        base_url.rstrip("/") + "/models", headers=auth_headers(api_key), timeout=timeout, verify=verify
    )


def model_ids(resp) -> list[str]:
    """The ids a ``/models`` answer lists ([] for a non-200 answer or a body that is not the list)."""
    if resp.status_code != 200:
        return []
    try:
        return [m.get("id") for m in resp.json().get("data", []) if isinstance(m, dict)]
    except (ValueError, AttributeError):
        return []


def stream_chat(
    base_url: str,
    body: dict,
    api_key: str | None = None,
    timeout: float = 60.0,
    headers: dict | None = None,
    session: requests.Session | None = None,
    verify: bool = True,
) -> Sample:
    """Send one streamed chat completion and return what the client saw (never raises for HTTP)."""
    body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    hdrs = {"Accept-Encoding": "identity", **(headers or {}), **auth_headers(api_key)}
    http = session or requests
    t_send = time.perf_counter()
    parser = StreamParser(t_send)
    try:
        with http.post(
            base_url.rstrip("/") + "/chat/completions",
            json=body,
            headers=hdrs,
            stream=True,
            timeout=timeout,
            verify=verify,
        ) as resp:
            if resp.status_code != 200:
                message = resp.text[:200].replace("\n", " ")
                return parser.finish(time.perf_counter(), f"HTTP {resp.status_code}: {message}")
            for line in resp.iter_lines():
                parser.feed(line, time.perf_counter())
    except requests.Timeout:
        return parser.finish(time.perf_counter(), f"Timeout: no data for {timeout:g} s")
    except requests.RequestException as exc:
        if "timed out" in str(exc):  # a read timeout mid-stream surfaces as a ConnectionError
            return parser.finish(time.perf_counter(), f"Timeout: no data for {timeout:g} s")
        return parser.finish(time.perf_counter(), f"{type(exc).__name__}: {str(exc)[:160]}")
    return parser.finish(time.perf_counter())
