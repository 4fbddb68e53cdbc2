"""One request of the workload's endpoint kind from a Locust user, under the workload's two
bounds, never raising for what the server does (``harness.load.users`` runs it; see its module
docstring).

The request goes out on a connection of the user's own pool (``harness.load.socket_client``), so
both ends are timed exactly: the TTFT runs from the moment just before the request is written
(its write's own time, microseconds, is in it), and every read, the headers' included, carries
the kernel's arrival stamp. The time the client took before that (building the request,
connecting) is the sample's send delay, kept apart. Every way a request can fail ends in the
sample's error, in the server's own words where it sent some, and is fired as Locust's
``request`` event with the sample.
"""

from __future__ import annotations

import json
import socket
import time
from typing import TYPE_CHECKING

import gevent
from locust import events
from locust.exception import CatchResponseError

from harness.workloads.schedules import lateness
from harness.safe_text import safe_text
from harness.measure.sample import Sample
from harness.measure.stream import StreamParser, error_message, whole_body_error
from harness.endpoints.http_client import MAX_BODY, stream_problem
from harness.load.socket_client import Connection, Head, Pool, Stale, read_head, read_stream, whole_body

if TYPE_CHECKING:
    from harness.workloads.request import Request
    from harness.load.workload import Workload


class Departure:
    """One request up to its departure: a connection (an idle one of the pool, else one opened
    now) and the request's bytes, then the write. The open loop makes it ready ahead of the
    request's due time and writes it at that time (``go``), so neither the connecting nor the
    building is in its lateness; the closed loop does both at once. A failure on the way (refused,
    reset) is kept and recorded by the request as if it had come there."""

    def __init__(self, pool: Pool, workload: Workload, job: Request) -> None:
        self.job = job
        self.t_send = time.perf_counter()  # when the client set out to send it
        self.conn: Connection | None = None
        self.data = b""
        self.reused = False
        self.error: Exception | None = None
        self.t_sent: float | None = None
        self.t_written: float | None = None
        try:
            self.conn = pool.acquire()
            self.reused = self.conn.used > 0
            self.data = pool.request_bytes(workload.path, workload.body(job), workload.headers())
        except Exception as exc:  # recorded by the request (``_attempt``), as every failure is
            self.error = exc

    def go(self, restart: bool = False) -> Departure:
        """Write the request now. ``restart``: made ready ahead of time, so the request starts
        now (its ``t_send``), and its send delay is the write's own."""
        if restart:
            self.t_send = time.perf_counter()
        if self.error is None and self.conn is not None:
            try:
                self.t_sent, self.t_written = self.conn.send(self.data)
            except Exception as exc:
                self.error = exc
        return self

    def drop(self) -> None:
        """Never sent (the level was stopped first): its connection closed."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def stream_once(pool: Pool, workload: Workload, job: Request, departed: Departure | None = None) -> Sample:
    """One streamed request; never raises for HTTP or stream problems. ``departed``: already
    written (the open loop's scheduler wrote it at its due time); else it is sent now.

    Some servers (llama-server, observed) close the connection after every streamed response
    although they advertise keep-alive; a request sent on such a connection never reached the
    server (nothing came back, not even a status line), so it is sent once more on a fresh
    connection; any other failure is recorded."""
    sample = _attempt(pool, workload, job, fresh=False, departed=departed)
    return sample if sample is not None else _attempt(pool, workload, job, fresh=True)


# Complexity allowed: one request's whole life (connect, send, head, body, each way to fail), flat.
def _attempt(  # noqa: C901
    pool: Pool, workload: Workload, job: Request, fresh: bool, departed: Departure | None = None
) -> Sample | None:
    """One try under both bounds: the whole request ends at ``workload.timeout`` (a gevent timer
    around it, so a server that never sends headers or trickles bytes ends there too), and each
    gap at ``workload.idle_timeout``. None: a stale kept-alive connection, to try again."""
    parser = workload.kind.parser(departed.t_send if departed else time.perf_counter(), workload.text_limit)
    parser.s.tags = dict(job.tags)
    timer = gevent.Timeout(workload.timeout)
    timer.start()
    conn, reusable, size = None, False, 0
    try:
        if departed is None:
            if fresh:
                pool.close()
            departed = Departure(pool, workload, job)
            parser.s.t_send = departed.t_send
            departed.go()
        conn, reused = departed.conn, departed.reused
        try:
            if departed.error is not None:
                raise departed.error
            parser.s.t_sent, parser.s.t_written = departed.t_sent, departed.t_written
            reads = conn.reads(workload.idle_timeout)
            head = Head()
            first = read_head(reads, head)
        except (Stale, BrokenPipeError, ConnectionResetError):
            if reused and not fresh:
                return None
            raise
        error = _problem(head, reads, workload.kind.streamed)
        if error is None and workload.kind.streamed:
            size = read_stream(reads, head, first, parser)
        elif error is None:  # one whole answer, timed at its end
            body = whole_body(reads, head, MAX_BODY)
            size = len(body)
            parser.feed_body(body, time.perf_counter())
        if error is None:
            reusable = head.message_complete and head.should_keep_alive()
        return _done(parser, workload, size, error, job)
    except gevent.Timeout as exc:
        if exc is not timer:
            raise
        return _done(
            parser,
            workload,
            size,
            f"Timeout: the request passed its total bound of {workload.timeout:g} s",
            job,
        )
    except Exception as exc:  # refused, reset, cut mid-stream, past the idle bound: recorded as such
        text = safe_text(exc, 160)
        if isinstance(exc, (TimeoutError, socket.timeout)):
            text = f"no byte from the server for {workload.idle_timeout:g} s (the idle bound)"
            return _done(parser, workload, size, f"Timeout: {text}", job)
        if isinstance(exc, Stale):
            text = "the server closed the connection without answering"
        name = "ConnectionError" if isinstance(exc, (ConnectionRefusedError, Stale)) else type(exc).__name__
        return _done(parser, workload, size, f"{name}: {text or 'connection lost'}", job)
    finally:
        timer.close()
        if conn is not None:
            pool.release(conn, reusable)


def _problem(head: Head, reads, streamed: bool = True) -> str | None:
    """Why the answer cannot be read (an HTTP error, compressed; streamed: a whole JSON body), or None."""
    status = head.get_code()
    if status != 200:
        body = whole_body(reads, head, MAX_BODY)
        try:
            message = error_message(json.loads(body or b""))
        except (ValueError, RecursionError):  # not JSON, or nested too deeply to parse
            message = safe_text(body[:200])
        return f"HTTP {status}: {message or '(empty body)'}"
    problem = stream_problem(200, head.header("content-encoding"))  # read case-insensitively
    if problem:
        return problem
    ctype = head.header("content-type").lower()
    if streamed and ctype and "text/event-stream" not in ctype:
        return whole_body_error(ctype, whole_body(reads, head, MAX_BODY))
    return None


def _done(parser: StreamParser, workload: Workload, size: int, error: str | None, job: Request) -> Sample:
    """Finish the sample and fire Locust's ``request`` event for it (a failure with its reason)."""
    sample = parser.finish(time.perf_counter(), error)
    due = getattr(job, "due", None)
    if due is not None:  # the open loop's schedule error: when it left against when it was due
        sample.tags["schedule_lateness_s"] = round(lateness(due, sample.t_departed), 6)
    events.request.fire(
        request_type="POST",
        name=workload.kind.name,
        response_time=(sample.t_end - sample.t_send) * 1000,
        response_length=size,
        exception=None if sample.ok else CatchResponseError(sample.error),
        context={"sample": sample},
        url=workload.path,
        response=None,
        start_time=time.time() - (sample.t_end - sample.t_send),
    )
    return sample
