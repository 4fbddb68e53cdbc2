"""Run the practice server: ``harness practice`` and ``make mock``."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import os
import signal
import sys
import time
from pathlib import Path

from harness.errors import ConfigError, PortBusy
from harness.practice.app import PracticeApp
from harness.practice.http import HEADER_TIMEOUT_S, serve
from harness.practice.profile import Profile

DEFAULT_PORT = 8099  # no engine in the seeds uses it (they use 8000, 8080-8083, 5000, 13305)
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def new_event_loop(use_uvloop: bool = True) -> asyncio.AbstractEventLoop:
    if use_uvloop:
        try:
            import uvloop

            return uvloop.new_event_loop()
        except ImportError:
            pass
    return asyncio.new_event_loop()


def tls_context(cert: str | None, key: str | None):
    """A server TLS context from PEM files, or None for plain HTTP."""
    if not cert:
        return None
    import ssl

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load TLS certificate {cert} / key {key}: {exc}") from exc
    return ctx


def run(
    profile: Profile,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    api_key: str | None = None,
    log_path: str | None = None,
    use_uvloop: bool = True,
    out=sys.stdout,
    tls=None,
    header_timeout_s: float = HEADER_TIMEOUT_S,
    imitation=None,
) -> int:
    if host not in LOOPBACK and api_key is None:
        print(
            f"warning: serving without an API key on {host}, beyond loopback: anyone on the network "
            "can use it",
            file=sys.stderr,
        )
    with contextlib.ExitStack() as stack:  # the log is closed however serving ends
        log = stack.enter_context(open(log_path, "a", encoding="utf-8")) if log_path else None
        _serve_until_signal(
            profile, host, port, api_key, log, use_uvloop, out, tls, header_timeout_s, imitation
        )
    print("practice server: stopped", file=out, flush=True)
    return 0


def _serve_until_signal(
    profile: Profile,
    host: str,
    port: int,
    api_key: str | None,
    log,
    use_uvloop: bool,
    out,
    tls,
    header_timeout_s: float = HEADER_TIMEOUT_S,
    imitation=None,
) -> None:
    """Listen, print where, and serve until SIGINT or SIGTERM; ``log`` is an open file or None."""
    loop = new_event_loop(use_uvloop)
    asyncio.set_event_loop(loop)
    app = PracticeApp(profile, loop, api_key=api_key, log=log, imitation=imitation)
    try:
        server = loop.run_until_complete(serve(app.handle, host, port, tls, header_timeout_s))
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            raise PortBusy(
                f"{host}:{port} is already in use; stop what holds it (it may be an earlier "
                "practice server, which is fine to reuse) or pass --port"
            ) from exc
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    for line in app.load_log_lines():
        app._log(line)
    for line in imitation.start_lines() if imitation else []:  # the imitated engine's own start lines
        print(line, file=out, flush=True)
    quiet_gc(loop, app)
    port = server.sockets[0].getsockname()[1]  # the port it got (--port 0: one the system chose)
    p = profile.raw
    scheme = "https" if tls else "http"
    print(
        f"practice server: slots={p['seats']} profile={profile.name} mode={profile.mode} "
        f"ctx_per_slot={p['ctx_per_seat']} listening on {scheme}://{host}:{port} (base URL "
        f"{scheme}://{host}:{port}/v1)",
        file=out,
        flush=True,
    )
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        loop.run_until_complete(stop.wait())
    finally:
        server.close()
        loop.close()


def quiet_gc(loop, app, young_every: float = 1.0, full_every: float = 30.0) -> None:
    """Keep the garbage collector from pausing token delivery.

    A full collection walks every object the server holds (tens of thousands of ground-truth
    records) and stalls the event loop for milliseconds. Automatic collection is turned off; the
    young generations are collected every second (cheap), and a full collection runs only when
    no request is in flight, at most every ``full_every`` seconds.
    """
    gc.freeze()
    gc.disable()
    last_full = [time.monotonic()]

    def tick() -> None:
        t0 = time.perf_counter()
        gc.collect(1)
        app.gc_pauses.append(time.perf_counter() - t0)
        engine = app.engine
        if not engine.running and not engine.waiting and time.monotonic() - last_full[0] > full_every:
            gc.collect()
            last_full[0] = time.monotonic()
        loop.call_later(young_every, tick)

    loop.call_later(young_every, tick)


def api_key_from_env(var: str | None) -> str | None:
    if not var:
        return None
    value = os.environ.get(var)
    if not value:
        raise ConfigError(
            f"--api-key-env names {var}, but that environment variable is empty; export it or drop the option"
        )
    return value


def resolve_log(path: str | None) -> str | None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    return path
