"""A port for a server to listen on; is a port free, and if not, who holds it."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import time
from pathlib import Path

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


# Where the kernel takes the local ports of outgoing connections when its own setting cannot be read
# (Linux's default; macOS's starts at 49152, above it).
EPHEMERAL_DEFAULT = (32768, 60999)
# The lowest port free_port picks: above the registered services most machines run.
LOWEST = 20000


def ephemeral_range() -> tuple[int, int]:
    """The ports the kernel hands to outgoing connections (Linux's ip_local_port_range; macOS's
    portrange sysctl; the Linux default when neither can be read)."""
    try:
        if sys.platform.startswith("linux"):
            low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
            return int(low), int(high)
        if sys.platform == "darwin":
            out = subprocess.run(
                ["sysctl", "-n", "net.inet.ip.portrange.first", "net.inet.ip.portrange.last"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.split()
            return int(out[0]), int(out[1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        pass
    return EPHEMERAL_DEFAULT


def free_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` that nothing holds now, for a server started later to listen on.

    Chosen at random below the kernel's ephemeral range, never in it: a port from that range
    (what binding port 0 gives) can be taken in the meantime as the local end of any outgoing
    connection on the machine, and then the server's bind fails with "address in use". Each
    candidate is bound without SO_REUSEADDR, so one held by a listener, or by a closed connection
    still in TIME_WAIT, is passed over. Falls back to the kernel's pick when the range leaves no
    room below it."""
    low, _ = ephemeral_range()
    if low - LOWEST >= 1000:
        for port in random.sample(range(LOWEST, low), 64):
            with socket.socket() as s:
                try:
                    s.bind((host, port))
                except OSError:
                    continue
                return port
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


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
