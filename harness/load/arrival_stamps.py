"""When each streamed line reached this machine, from the kernel rather than from the client.

A client that is busy with other streams reads a token late, and a tool that stamps tokens when
it reads them reports that delay as the server's. Linux stamps every received packet; with
``SO_TIMESTAMPNS`` on the socket, each ``recvmsg`` returns the arrival time of the newest packet it
read. Lines complete in that read get that time (never later than when they were read); lines that
were already buffered keep the time of the read that brought them. Where the kernel gives no stamp (TLS
sockets, other systems, an old kernel), the time of the read is used, as before, and ``clock``
says which.

``harness.load.socket_client`` reads the load's responses this way, the headers' read included.
"""

from __future__ import annotations

import socket
import struct
import sys

# asm-generic/socket.h: SO_TIMESTAMPNS (the 64-bit-time variant is 64 and needs a different unpack)
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35 if sys.platform.startswith("linux") else None)
ANC_SIZE = socket.CMSG_SPACE(16) if hasattr(socket, "CMSG_SPACE") else 64  # room for one stamp


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


_STAMP = struct.Struct("qq").unpack_from  # struct timespec: seconds, nanoseconds


def kernel_time(ancdata, now_perf: float, now_real: float) -> float | None:
    """The arrival stamp in ``ancdata`` on the ``time.perf_counter`` clock, or None. (Once per read
    of every stream: no copy of the stamp's bytes.)"""
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
            sec, nsec = _STAMP(data)
            return min(now_perf, sec + nsec * 1e-9 - (now_real - now_perf))
    return None
