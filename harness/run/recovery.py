"""Recovery, a step the runner does in-process rather than as a harness command: after
saturation the server returns to idle and answers a fresh request (the admission level's choice
and its record are ``harness/run/admission_step.py``'s).

It talks to the server through ``harness/endpoints/http_client.py`` under its two bounds (in all, and per gap
without a byte): each ``/metrics`` read ``METRICS_BOUND_S`` (cut to the time the wait has left),
the smoke request ``SMOKE_BOUND_S``."""

from __future__ import annotations

import time

from harness.bounds import Bounds
from harness.measure.stream import error_message
from harness.errors import TargetError
from harness.endpoints import http_client as http
from harness.run.context import BlockContext

# Gauges that count requests running or queued, by their name's ending (llama-server and vLLM).
QUEUE_GAUGES = ("requests_processing", "requests_deferred", "num_requests_running", "num_requests_waiting")
METRICS_BOUND_S = 5.0
SMOKE_BOUND_S = 60.0


def _busy_after_load(metrics_url: str, timeout: float) -> float | None:
    """Requests still running or waiting once the server settles (0: idle), or None when there
    is no /metrics to read. Gives up after ``timeout`` and returns what it read last."""
    from harness.engines.metrics_sampler import parse_metrics

    deadline, busy = time.monotonic() + timeout, None
    while (left := deadline - time.monotonic()) > 0:
        try:
            r = http.request("GET", metrics_url, Bounds.of(max(min(METRICS_BOUND_S, left), 0.01)))
        except TargetError:
            break
        if r.status != 200:
            break
        try:
            gauges = [v for k, v in parse_metrics(r.text).items() if k.endswith(QUEUE_GAUGES)]
        except ValueError:  # no exposition the parser takes: as good as no /metrics
            break
        if not gauges:
            break
        busy = sum(gauges)
        if busy == 0:
            break
        time.sleep(0.5)
    return busy


def recovery(
    ctx: BlockContext, api_env: dict[str, str], timeout: float = 120.0, smoke_bound_s: float = SMOKE_BOUND_S
) -> tuple[str, str]:
    """After saturation: the server returns to idle (within ``timeout``) and answers a fresh smoke
    request (within ``smoke_bound_s``). Returns the step's status and reason."""
    base = ctx.api_url
    metrics_url = base[: -len("/v1")] + "/metrics" if base.endswith("/v1") else base + "/metrics"
    busy = _busy_after_load(metrics_url, timeout)
    if busy:
        return "failed", (
            f"still {busy:g} request(s) running or waiting {timeout:.0f} s after the load stopped"
        )
    body = {
        "model": ctx.model,
        "messages": [{"role": "user", "content": "Reply with one word: ready"}],
        "max_tokens": 8,
        "temperature": 0,
    }
    headers = http.auth_headers(next(iter(api_env.values()), None))
    t0 = time.monotonic()
    try:
        r = http.request("POST", http.chat_url(base), Bounds.of(smoke_bound_s), payload=body, headers=headers)
    except TargetError as exc:
        return "failed", f"smoke request failed: {exc}"
    if r.status != 200:
        return "failed", f"smoke request answered HTTP {r.status}: {_message(r)}"
    idle = "idle by /metrics" if busy == 0 else "no /metrics to read"
    return "passed", f"{idle}; smoke request answered in {time.monotonic() - t0:.2f} s"


def _message(reply: http.Reply) -> str:
    """The server's own words in an error answer (its JSON error message, else the body's start)."""
    try:
        return error_message(reply.json())
    except ValueError:
        return " ".join(reply.text.split())[:200] or "(empty body)"
