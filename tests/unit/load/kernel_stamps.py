"""Receive stamping switched on before a test relies on it, by waiting for it, not by a sleep.

Linux turns receive stamping on for the whole system from a work queue, a moment after the first
socket asks, and a packet that arrives before then carries no stamp (about 1 run in 8 here, with
no wait at all). ``stamping_on`` asks on a loopback pair of its own, sends a byte until one comes
back stamped (at most 10 s: a loaded machine's moment), and keeps that socket open, which keeps
stamping on for every socket, until it ends."""

from __future__ import annotations

import contextlib
import socket
import time

from harness.load import arrival_stamps


def loopback_pair() -> tuple[socket.socket, socket.socket, socket.socket]:
    """A listening socket, a client connected to it and the server's side of that connection."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    client = socket.create_connection(srv.getsockname())
    peer, _ = srv.accept()
    return srv, client, peer


@contextlib.contextmanager
def stamping_on(deadline_s: float = 10.0):
    srv, client, peer = loopback_pair()
    try:
        assert arrival_stamps.enable(client), "SO_TIMESTAMPNS refused"
        client.settimeout(deadline_s)
        deadline = time.monotonic() + deadline_s
        while True:
            peer.send(b"x")
            _data, ancdata, _f, _a = client.recvmsg(16, arrival_stamps.ANC_SIZE)
            if arrival_stamps.kernel_time(ancdata, time.perf_counter(), time.time()) is not None:
                break
            assert time.monotonic() < deadline, f"the kernel stamped no packet in {deadline_s:g} s"
            time.sleep(0.01)
        yield
    finally:
        for s in (client, peer, srv):
            s.close()
