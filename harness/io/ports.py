"""Is a port free, and if not, who holds it."""

from __future__ import annotations

import socket
import time

import psutil


def port_open(host: str, port: int, timeout: float = 0.3) -> bool:
    """True when something accepts TCP connections at host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def holder(port: int) -> str | None:
    """``name (pid N)`` of the process listening on ``port``, when the OS lets us see it."""
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
                try:
                    return f"{psutil.Process(conn.pid).name()} (pid {conn.pid})"
                except psutil.Error:
                    return f"pid {conn.pid}"
    except (psutil.Error, OSError):
        return None
    return None


def wait_port_free(host: str, port: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not port_open(host, port):
            return True
        time.sleep(0.1)
    return not port_open(host, port)
