"""When each streamed line reached this machine, from the kernel rather than from the client.

A client that is busy with other streams reads a token late, and a tool that stamps tokens when
it reads them reports that delay as the server's. Linux stamps every received packet; with
``SO_TIMESTAMPNS`` on the socket, each ``recvmsg`` returns the arrival time of the newest packet it
read. Lines complete in that read get that time (never later than when they were read); lines that
were already buffered keep the time of the read that brought them. Where the kernel gives no stamp (TLS
sockets, other systems, an old kernel), the time of the read is used, as before, and ``clock``
says which.

The reader works on a geventhttpclient response (Locust's FastHttpUser): its socket, its HTTP
parser (``feed``) and its body buffer.
"""

from __future__ import annotations

import socket
import struct
import sys
import time
from typing import Iterator

# asm-generic/socket.h: SO_TIMESTAMPNS (the 64-bit-time variant is 64 and needs a different unpack)
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35 if sys.platform.startswith("linux") else None)
_ANC = socket.CMSG_SPACE(16) if hasattr(socket, "CMSG_SPACE") else 64


class StreamCut(ConnectionError):
    """The server closed the connection before the response was complete."""


def enable(sock) -> bool:
    """Ask the kernel to stamp arrivals on this socket; False where it cannot (TLS, not Linux)."""
    if SO_TIMESTAMPNS is None or not hasattr(sock, "recvmsg") or "SSL" in type(sock).__name__:
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


def kernel_time(ancdata, now_perf: float, now_real: float) -> float | None:
    """The arrival stamp in ``ancdata`` on the ``time.perf_counter`` clock, or None."""
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
            sec, nsec = struct.unpack("qq", data[:16])
            return min(now_perf, sec + nsec * 1e-9 - (now_real - now_perf))
    return None


# Complexity allowed: the per-read hot path of every stream, kept flat.
def stamped_lines(  # noqa: C901
    response, sep: bytes = b"\n", idle_s: float | None = None
) -> Iterator[tuple[bytes, float, bool, float | None]]:
    """Each body line of ``response`` with its arrival time, whether the kernel stamped it, and the
    read lag: how long the data waited in the socket before this client read it (None without a
    stamp). A lag longer than the gap between tokens means the kernel merged packets and only the
    newer stamp is left, so the lag is how a level knows the client, not the server, was late.

    ``idle_s``: give up (``TimeoutError``) when no byte comes for that long (default: the socket's
    own timeout). The wait is one reusable readiness watcher and one lazily re-armed timer per
    stream, not a timer object and a failed read per event (under cProfile, a 6 s level of 64
    streams spent about 1.1 s of 7.2 s on those)."""
    sock = getattr(response, "_sock", None)
    buf = getattr(response, "_body_buffer", None)
    raw = getattr(sock, "_sock", None)  # the OS socket under gevent's cooperative one
    if raw is None or buf is None or not enable(sock):
        while True:
            line = response.readline(sep)
            if not line:
                return
            yield line, time.perf_counter(), False, None
    import gevent

    hub = gevent.get_hub()
    idle = idle_s if idle_s is not None else sock.gettimeout()
    watcher = hub.loop.io(raw.fileno(), 1)
    timer = gevent.Timeout(idle) if idle else None
    if timer is not None:
        timer.start()
    t, stamped, lag = time.perf_counter(), False, None  # for bytes that came with the headers
    last = t
    size = getattr(response, "block_size", 65536)
    try:
        while True:
            cut = buf.find(sep)
            if cut >= 0:
                line = bytes(buf[: cut + 1])
                del buf[: cut + 1]
                yield line, t, stamped, lag
                continue
            if response.message_complete:
                if buf:
                    line = bytes(buf)
                    del buf[:]
                    yield line, t, stamped, lag
                return
            try:
                data, anc, _flags, _addr = raw.recvmsg(size, _ANC)
            except BlockingIOError:
                try:
                    hub.wait(watcher)
                except gevent.Timeout as exc:
                    if exc is not timer:
                        raise
                    quiet = time.perf_counter() - last
                    if quiet >= idle:
                        raise TimeoutError(f"no data from the server for {quiet:.0f} s") from None
                    timer.close()
                    timer = gevent.Timeout(idle - quiet)
                    timer.start()
                continue
            now_perf, now_real = time.perf_counter(), time.time()
            last = now_perf
            k = kernel_time(anc, now_perf, now_real)
            t, stamped, lag = (k, True, now_perf - k) if k is not None else (now_perf, False, None)
            if not data:
                response.feed(data)  # the peer closed: a close-delimited body ends here
                if not response.message_complete:
                    raise StreamCut("the server closed the connection mid-response")
                continue
            response.feed(data)
    except BaseException:
        response.release()
        raise
    finally:
        if timer is not None:
            timer.close()
        watcher.close()
