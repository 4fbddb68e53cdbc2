#!/usr/bin/env python3
"""What one small write to a loopback TCP socket costs this machine's kernel (prints one line).

The practice server writes each token event as one small send to a socket whose reader sleeps
on another core; that kernel time is most of the server's cost per event, and it differs a lot
between machines. This measures it with nothing else in the way: a reader thread pinned to the
last core, the sender pinned to the first, 200-byte sends with a short sleep every ten so the
reader goes back to sleep as a real client does.

    .venv/bin/python scripts/send_cost.py [--sends 20000]
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time


def measure(sends: int, size: int = 200) -> list[float]:
    cores = sorted(os.sched_getaffinity(0))
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        peer, _ = server.accept()
    for s in (client, peer):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def drain() -> None:
        os.sched_setaffinity(0, {cores[-1]})
        while client.recv(65536):
            pass

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    os.sched_setaffinity(0, {cores[0]})
    message, costs = b"x" * size, []
    for i in range(sends):
        t0 = time.perf_counter()
        peer.send(message)
        costs.append(time.perf_counter() - t0)
        if i % 10 == 9:
            time.sleep(0.0005)
    peer.close()
    reader.join(5)
    client.close()
    return sorted(costs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=20000)
    args = parser.parse_args()
    costs = measure(args.sends)
    q = lambda f: costs[min(len(costs) - 1, int(len(costs) * f))] * 1e6  # noqa: E731
    print(
        f"send of 200 bytes, reader on another core: p50 {q(0.5):.1f} us, p90 {q(0.9):.1f} us, "
        f"p99 {q(0.99):.1f} us over {len(costs)} sends"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
