"""The launchers' health waits and the recovery step against hostile servers: every request they
send goes through harness/endpoints/http_client.py, so a health URL or a /metrics page that never answers, or
trickles, ends at the documented bound (the wait's own timeout; each try's bound), with the reason."""

from __future__ import annotations

import sys
import time
from types import SimpleNamespace

import pytest

from harness.errors import EngineError
from harness.engines.ports import port_open
from harness.engines.launchers.base import NotHealthy, wait_healthy
from harness.engines.launchers.external import ExternalLauncher
from harness.engines.launchers.host import HostLauncher
from harness.run.recovery import recovery
from tests.conftest import free_port
from tests.integration.faults.hostile import MODEL, SERVER_MESSAGE, HostileServer

# In-process waits on a server already listening (no process starts): each ends at its own
# bound plus milliseconds (a thread's start, one poll interval). SLACK is 2 s, far above that on a
# loaded machine, and far below the failures it catches: a try not cut to the wait's time left
# (its own 60 s), or a trickle that keeps a try alive (the fake servers hold on for 10 minutes).
SLACK = 2.0


def _timed(fn, *args, **kw):
    t0 = time.monotonic()
    try:
        return fn(*args, **kw), None, time.monotonic() - t0
    except Exception as exc:  # the test asserts which
        return None, exc, time.monotonic() - t0


@pytest.mark.parametrize("fault", ["no-headers", "trickle", "trickle-headers"])
def test_a_health_url_that_never_answers_or_trickles_ends_at_the_waits_timeout(fault):
    with HostileServer(fault) as srv:
        _, exc, took = _timed(wait_healthy, srv.root + "/health", 3.0, interval=0.1, request_timeout=1.0)
    assert isinstance(exc, NotHealthy), exc
    assert exc.last.startswith("Timeout:"), exc.last  # each try ended at its own bound, not at a byte
    assert 3.0 <= took < 3.0 + SLACK, took


def test_one_try_never_outlasts_the_time_the_wait_has_left():
    with HostileServer("trickle") as srv:  # a try's own bound (60 s) is cut to the 1.5 s left
        _, exc, took = _timed(wait_healthy, srv.root + "/health", 1.5, request_timeout=60.0)
    assert isinstance(exc, NotHealthy) and "total bound of 1.5 s" in exc.last, exc
    assert took < 1.5 + SLACK, took


@pytest.mark.parametrize(
    "fault, last",
    [
        ("http-500", "HTTP 500"),
        ("garbage", "BadStatusLine"),
        ("reset", "RemoteDisconnected"),
        ("short-body", "StreamCut: the server closed the connection mid-response"),  # a 200 cut short
    ],
)
def test_a_health_url_that_answers_wrongly_is_named_in_the_error(fault, last):
    with HostileServer(fault) as srv:
        _, exc, took = _timed(wait_healthy, srv.root + "/health", 1.0, interval=0.1)
    assert isinstance(exc, NotHealthy) and last in exc.last and last in str(exc), exc
    assert took < 1.0 + SLACK


def test_nothing_listening_and_a_healthy_server():
    port = free_port()
    _, exc, took = _timed(wait_healthy, f"http://127.0.0.1:{port}/health", 0.5, interval=0.1)
    assert isinstance(exc, NotHealthy) and exc.last == "nothing answers", exc
    with HostileServer("ok") as srv:
        _, exc, took = _timed(wait_healthy, srv.root + "/health", 5.0)
    assert exc is None and took < 2.0


def test_the_external_launcher_waits_within_its_timeout():
    with HostileServer("trickle-headers") as srv:
        launcher = ExternalLauncher(base_url=srv.base_url, health_url=srv.root + "/health")
        _, exc, took = _timed(launcher.start, 2.0)
    assert isinstance(exc, NotHealthy) and "not healthy after 2 s" in str(exc), exc
    assert took < 2.0 + SLACK


def test_the_host_launcher_stops_its_engine_when_the_health_url_trickles(tmp_path):
    port = free_port()
    with HostileServer("trickle") as srv:
        launcher = HostLauncher(
            argv=[sys.executable, "-c", "import time; time.sleep(120)"],
            host="127.0.0.1",
            port=port,
            health_url=srv.root + "/health",
            log_path=tmp_path / "engine.log",
        )
        _, exc, took = _timed(launcher.start, 2.5)
    assert isinstance(exc, EngineError) and "was not healthy after 2 s (last: Timeout: " in str(exc), exc
    assert took < 2.5 + 10 + SLACK  # the wait, then the stop (SIGTERM, at most 10 s)
    assert launcher.proc is not None and launcher.proc.poll() is not None  # stopped, as before
    assert not port_open("127.0.0.1", port)


def _ctx(srv) -> SimpleNamespace:
    # what recovery reads of a block: where the steps send their requests, and the model
    return SimpleNamespace(base_url=srv.base_url, api_url=srv.base_url, model=MODEL)


def test_recovery_passes_when_metrics_say_idle_and_the_smoke_request_answers():
    with HostileServer("ok") as srv:
        (status, reason), exc, took = _timed(recovery, _ctx(srv), {}, timeout=5)
        assert "POST /v1/chat/completions HTTP/1.1" in srv.requests
    assert exc is None and status == "passed" and reason.startswith("idle by /metrics"), reason


@pytest.mark.parametrize("fault", ["no-headers", "trickle", "trickle-headers"])
def test_recovery_ends_at_its_bounds_when_the_server_stalls(fault):
    with HostileServer(fault) as srv:
        (status, reason), exc, took = _timed(recovery, _ctx(srv), {}, timeout=2, smoke_bound_s=2)
    assert exc is None and status == "failed", (exc, status)
    assert reason.startswith("smoke request failed: POST ") and "Timeout:" in reason, reason
    assert took < 2 + 2 + SLACK, took  # /metrics within its 2 s, then the smoke request's 2 s


def test_recovery_keeps_the_servers_own_words():
    with HostileServer("http-500") as srv:
        (status, reason), exc, _ = _timed(recovery, _ctx(srv), {}, timeout=2, smoke_bound_s=2)
    assert status == "failed" and reason == f"smoke request answered HTTP 500: {SERVER_MESSAGE}", reason
