"""Bytes to lines by the SSE rules: ``\\n``, ``\\r\\n`` or a bare ``\\r`` ends a line. Pure functions of
the bytes, for the two readers: ``harness.endpoints.http_client`` (``LineSplitter``) and the load's own
connections (``harness.load.socket_client``: ``take_lines``, a read's lines at once)."""

from __future__ import annotations

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


def take_lines(buf: bytearray) -> list[bytes]:
    """The complete lines at the front of ``buf``, taken out of it, each with its ending (``\\n``,
    ``\\r\\n`` or a bare ``\\r``, as the SSE rules allow): the lines that
    ``harness.load.socket_client.body_lines`` yields one by one, with one copy and one split per
    read instead of work per line. A ``\\r`` that ends the buffer stays in it: it may be the first
    half of ``\\r\\n``."""
    end = max(buf.rfind(b"\n"), buf.rfind(b"\r", 0, len(buf) - 1))
    if end < 0:
        return []
    lines = bytes(buf[: end + 1]).splitlines(True)  # bytes split at \n, \r\n and \r only
    del buf[: end + 1]
    return lines


class LineSplitter:
    """Bytes as they arrive, in any pieces, to whole lines (``\\n``, ``\\r\\n`` or ``\\r`` ended), as
    the SSE rules read them; ``end`` gives the last, unterminated line."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        lines: list[bytes] = []
        while True:
            cut = min((i for i in (self._buf.find(b"\n"), self._buf.find(b"\r")) if i >= 0), default=-1)
            if cut < 0 or (self._buf[cut : cut + 1] == b"\r" and cut + 1 == len(self._buf)):
                return lines  # a lone \r at the end may be the first half of \r\n
            end = cut + 2 if self._buf[cut : cut + 2] == b"\r\n" else cut + 1
            lines.append(self._buf[:cut])
            self._buf = self._buf[end:]

    @property
    def pending(self) -> int:
        """Bytes of a line begun and not yet ended."""
        return len(self._buf)

    def end(self) -> list[bytes]:
        rest, self._buf = self._buf, b""
        return [rest.rstrip(b"\r")] if rest else []
