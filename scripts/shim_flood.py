"""Time the host-side shim's /v1/health under a flood: 1,000 connections that began a request
head and stopped (25 from each of 127.0.0.2 to 127.0.0.41; Linux), then five health requests
from 127.0.0.1. Prints what the shim held (sockets, threads, RSS) and each answer's first line
and seconds. The shim file is the argument, so an older one can be timed beside it:

    git show a6b2054:shim/harness_shim.py > /tmp/old_shim.py
    .venv/bin/python scripts/shim_flood.py /tmp/old_shim.py
    .venv/bin/python scripts/shim_flood.py shim/harness_shim.py
"""

from __future__ import annotations

import resource
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.shim import test_shim_flood as flood  # noqa: E402
from tests.integration.shim.conftest import start_shim, write_allow, write_plan  # noqa: E402


def health(shim) -> tuple[str, float]:
    t0 = time.monotonic()
    auth = f"Authorization: Bearer {shim.token}\r\nConnection: close\r\n\r\n".encode()
    try:
        with socket.create_connection(("127.0.0.1", shim.port), timeout=10) as s:
            s.sendall(flood.HEAD + auth)
            answer = b""
            while part := s.recv(65536):
                answer += part
        first = answer.split(b"\r\n")[0].decode()
    except OSError as exc:
        first = repr(exc)
    return first, round(time.monotonic() - t0, 4)


def main(script: Path) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (4000, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    folder = Path(tempfile.mkdtemp())
    library = folder / "models"
    library.mkdir()
    (library / "model.gguf").write_bytes(b"GGUF")
    allow = write_allow(folder, write_plan(folder, [{"id": "practice", "engine": "practice-shim"}]), library)
    shim = start_shim(allow, folder / "state", library, script=script)
    try:
        rss = flood._status(shim.proc.pid, "VmRSS")
        socks = flood._flood(shim.port, [f"127.0.0.{i}" for i in range(2, 42)], 1000)
        time.sleep(1)
        held, threads = flood._sockets(shim.proc.pid), flood._status(shim.proc.pid, "Threads")
        after = flood._status(shim.proc.pid, "VmRSS")
        print(f"{script}: {held} sockets, {threads} threads, RSS {rss} -> {after} kB")
        print("health:", [health(shim) for _ in range(5)])
        for s in socks:
            s.close()
    finally:
        shim.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
