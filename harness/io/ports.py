"""Is a port free, and if not, who holds it."""

from __future__ import annotations

import socket
import time

import psutil

from harness.errors import ConfigError


def is_port(port: object) -> bool:
    """Whether ``port`` is a TCP port number one can listen on: a whole number from 1 to 65535."""
    return isinstance(port, int) and not isinstance(port, bool) and 1 <= port <= 65535


def port_open(host: str, port: int, timeout: float = 0.3) -> bool:
    """True when something accepts TCP connections at host:port (ConfigError, one line, for no
    port number: a port out of range is neither open nor free)."""
    if not is_port(port):
        raise ConfigError(f"{port!r} is not a TCP port (1 to 65535); fix the port")
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def listener_pid(port: int) -> int | None:
    """The pid of the process listening on ``port``, when the OS lets us see it (another user's
    process, a service's, may be hidden: None)."""
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
                return conn.pid
    except (psutil.Error, OSError):
        return None
    return None


def holder(port: int) -> str | None:
    """``name (pid N)`` of the process listening on ``port``, when the OS lets us see it."""
    pid = listener_pid(port)
    if pid is None:
        return None
    try:
        return f"{psutil.Process(pid).name()} (pid {pid})"
    except psutil.Error:
        return f"pid {pid}"


def wait_port_free(host: str, port: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not port_open(host, port):
            return True
        time.sleep(0.1)
    return not port_open(host, port)
