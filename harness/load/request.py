"""One streamed chat request from a Locust user, under the workload's two bounds, never raising
for what the server does (``harness.load.user`` runs it; see its module docstring).

Each request is read line by line from the socket response, because FastHttp's own
``iter_lines`` waits for 1 KiB blocks; every way it can fail ends in the sample's error, in the
server's own words where it sent some, and is fired as Locust's ``request`` event with the sample.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import gevent
from locust import events

from harness.core.stream import Sample, StreamParser, error_message, whole_body_error
from harness.io.arrival_stamps import stamped_lines
from harness.io.http import stream_problem

if TYPE_CHECKING:
    from harness.load.user import Workload


def stream_once(client, workload: Workload, prompt: str) -> Sample:
    """One streamed request on a FastHttpSession; never raises for HTTP or stream problems.

    Some servers (llama-server, observed) close the connection after every streamed response
    although they advertise keep-alive, and the pool hands that dead connection to the next
    request, which then fails before a byte is sent back. Such a request never reached the
    server, so it is sent once more on a fresh connection; any other failure is recorded.
    """
    sample = _stream_attempt(client, workload, prompt, final=False)
    if sample is None:
        sample = _stream_attempt(client, workload, prompt, final=True)
    return sample


def _stream_attempt(client, workload: Workload, prompt: str, final: bool) -> Sample | None:
    """One try under both bounds: the whole request ends at ``workload.timeout`` (a gevent timer
    around it, so a server that never sends headers or trickles bytes ends there too), and each
    gap at ``workload.idle_timeout``."""
    t_send = time.perf_counter()
    parser = StreamParser(t_send)
    timer = gevent.Timeout(workload.timeout)
    timer.start()
    try:
        return _attempt(client, workload, prompt, final, parser)
    except gevent.Timeout as exc:
        if exc is not timer:
            raise
        error = f"Timeout: the request passed its total bound of {workload.timeout:g} s"
        return _failed(parser, t_send, workload, error, TimeoutError(error))
    except Exception as exc:  # a cut stream raises out of readline; record it ourselves
        text = " ".join(str(exc).split())[:160]
        if isinstance(exc, TimeoutError) and "no data" in text:
            text = f"no byte from the server for {workload.idle_timeout:g} s (the idle bound)"
        return _failed(parser, t_send, workload, f"{type(exc).__name__}: {text}", exc)
    finally:
        timer.close()


def _attempt(client, workload: Workload, prompt: str, final: bool, parser: StreamParser) -> Sample | None:
    t_send = parser.s.t_send
    with client.post(
        workload.path,
        data=workload.body(prompt),
        headers=workload.headers(),
        stream=True,
        catch_response=True,
        name="chat",
    ) as resp:
        status = resp.status_code
        if status == 0 and not final and "closed" in str(resp.error):
            resp.request_meta["context"] = {"stale_connection": True}
            resp.request_meta["name"] = "stale-connection (resent)"
            resp.success()  # not a request the server saw: do not count it
            return None
        error = _response_problem(resp) if status == 200 else _status_error(resp, workload)
        if error is None:
            _read_stream(resp, workload, parser)
        sample = parser.finish(time.perf_counter(), error)
        resp.request_meta["response_time"] = (sample.t_end - t_send) * 1000
        resp.request_meta["context"] = {"sample": sample}
        if sample.ok:
            resp.success()
        else:
            resp.failure(sample.error)
        return sample


def _status_error(resp, workload: Workload) -> str:
    if not resp.status_code:
        text = " ".join(str(resp.error).split())
        if "timed out" in text:
            return f"Timeout: no byte from the server for {workload.idle_timeout:g} s (the idle bound)"
        return "ConnectionError: " + text[:200]
    try:
        message = error_message(json.loads(resp.content or b""))
    except ValueError:
        message = (resp.text or "")[:200].replace("\n", " ")
    return f"HTTP {resp.status_code}: {message}"


def _response_problem(resp) -> str | None:
    """Why a 200 cannot be read as an event stream (the same rules as ``harness.io.http``)."""
    problem = stream_problem(200, resp.headers)
    if problem:
        return problem
    ctype = (resp.headers.get("Content-Type") or "").lower()
    if ctype and "text/event-stream" not in ctype:
        return whole_body_error(ctype, resp.content or b"")
    return None


def _read_stream(resp, workload: Workload, parser: StreamParser) -> None:
    # the socket response, read as lines arrive, each line timed by the kernel's arrival stamp
    # where it gives one (a busy client does not add its own delay) and, per token, how long it
    # waited in the socket for this client (lines without a token, such as the role chunk that
    # came with the headers, time nothing)
    stamped, tokens, lags = False, parser.s.token_times, parser.s.read_lags
    for line, t, by_kernel, lag in stamped_lines(resp._response, idle_s=workload.idle_timeout):
        before = len(tokens)
        parser.feed(line, t)
        stamped = stamped or by_kernel
        if lag is not None and len(tokens) > before:
            lags.append(lag)
    parser.s.clock = "kernel" if stamped else "read"


def _failed(parser: StreamParser, t_send: float, workload: Workload, error: str, exc) -> Sample:
    """Record a request that raised (cut, reset, past a bound) as the failure it is."""
    sample = parser.finish(time.perf_counter(), error)
    events.request.fire(
        request_type="POST",
        name="chat",
        response_time=(sample.t_end - t_send) * 1000,
        response_length=0,
        exception=exc,
        context={"sample": sample},
        url=workload.path,
        response=None,
        start_time=time.time(),
    )
    return sample
