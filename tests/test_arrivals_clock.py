"""Kernel receive stamps as arrival times: the stamp on the client's clock, never later than the read."""

from __future__ import annotations

import socket
import struct
import sys
import time

import pytest

from harness import arrivals_clock


def anc(seconds: float):
    return [(socket.SOL_SOCKET, arrivals_clock.SO_TIMESTAMPNS, struct.pack("qq", int(seconds),
                                                                         int(round(seconds % 1 * 1e9))))]


def test_the_stamp_moves_to_the_perf_counter_clock_and_is_never_after_the_read():
    now_perf, now_real = 1000.0, 1_800_000_000.0
    assert arrivals_clock.kernel_time(anc(now_real - 0.012), now_perf, now_real) == pytest.approx(now_perf - 0.012,
                                                                                                 abs=1e-6)
    assert arrivals_clock.kernel_time(anc(now_real + 0.5), now_perf, now_real) == now_perf  # clock step: clamp
    assert arrivals_clock.kernel_time([], now_perf, now_real) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_TIMESTAMPNS is Linux's")
def test_a_late_read_still_gets_the_arrival_time():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    client = socket.create_connection(srv.getsockname())
    peer, _ = srv.accept()
    try:
        assert arrivals_clock.enable(client)
        sent = time.perf_counter()
        peer.send(b"data: x\n\n")
        time.sleep(0.05)  # the reader is busy elsewhere
        _data, ancdata, _f, _a = client.recvmsg(4096, 64)
        now = time.perf_counter()
        stamp = arrivals_clock.kernel_time(ancdata, now, time.time())
        assert stamp is not None and stamp - sent < 0.005 and now - sent >= 0.05
    finally:
        for s in (client, peer, srv):
            s.close()
