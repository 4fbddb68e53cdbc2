"""Kernel receive stamps as arrival times: the stamp on the client's clock, never later than the read."""

from __future__ import annotations

import socket
import struct
import sys
import time

import pytest

from harness.load import arrival_stamps
from tests.unit.load.kernel_stamps import loopback_pair, stamping_on


def anc(seconds: float):
    return [
        (
            socket.SOL_SOCKET,
            arrival_stamps.SO_TIMESTAMPNS,
            struct.pack("qq", int(seconds), int(round(seconds % 1 * 1e9))),
        )
    ]


def test_the_stamp_moves_to_the_perf_counter_clock_and_is_never_after_the_read():
    now_perf, now_real = 1000.0, 1_800_000_000.0
    assert arrival_stamps.kernel_time(anc(now_real - 0.012), now_perf, now_real) == pytest.approx(
        now_perf - 0.012, abs=1e-6
    )
    # clock step: clamp
    assert arrival_stamps.kernel_time(anc(now_real + 0.5), now_perf, now_real) == now_perf
    assert arrival_stamps.kernel_time([], now_perf, now_real) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_TIMESTAMPNS is Linux's")
def test_a_late_read_still_gets_the_arrival_time():
    srv, client, peer = loopback_pair()
    try:
        assert arrival_stamps.enable(client)
        with stamping_on():  # waits until the kernel stamps packets (kernel_stamps.py)
            sent = time.perf_counter()
            peer.send(b"data: x\n\n")
            time.sleep(0.2)  # the reader is busy elsewhere
            _data, ancdata, _f, _a = client.recvmsg(4096, 64)
            now = time.perf_counter()
        stamp = arrival_stamps.kernel_time(ancdata, now, time.time())
        # The packet arrived during send (loopback); a stamp taken at the read would be 0.2 s
        # later at least. 0.1 s leaves room for this thread losing the CPU around the send.
        assert stamp is not None and stamp - sent < 0.1 and now - sent >= 0.2
    finally:
        for s in (client, peer, srv):
            s.close()
