#!/usr/bin/env python3
"""The practice server's own timing benchmark (a benchmark, not a test): prints a table.

For each profile and number of concurrent streams, the server runs pinned to one core and a
light asyncio client on the other core keeps that many streams busy for a fixed time. The
server's lateness (actual send time minus scheduled send time, per token event) comes from its
own ground truth (``/practice/timing``), so the client's speed does not enter the figures.

    .venv/bin/python scripts/bench_server.py [--seconds 6] [--streams 1,16,64,256]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path

import psutil
import requests
from tabulate import tabulate

from harness.engines.ports import free_port

ROOT = Path(__file__).resolve().parents[1]


class Stream(asyncio.Protocol):
    """One keep-alive connection sending the same streamed request again and again."""

    def __init__(self, request: bytes, stop_at: float, counts: list, delay: float = 0.0) -> None:
        self.request, self.stop_at, self.counts, self.delay = request, stop_at, counts, delay
        self.tail = b""
        self.done = asyncio.get_running_loop().create_future()

    def connection_made(self, transport) -> None:
        self.transport = transport
        asyncio.get_running_loop().call_later(self.delay, transport.write, self.request)

    def data_received(self, data: bytes) -> None:
        self.counts[0] += data.count(b"data: {")
        chunk = self.tail + data
        self.tail = chunk[-16:]
        if b"0\r\n\r\n" in chunk and b"[DONE]" in chunk[-64:] or chunk.endswith(b"[DONE]\n\n\r\n0\r\n\r\n"):
            self.counts[1] += 1
            self.tail = b""
            if time.monotonic() < self.stop_at:
                self.transport.write(self.request)
            else:
                self.transport.close()

    def connection_lost(self, exc) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def drive(
    port: int, streams: int, seconds: float, max_tokens: int, stagger: float
) -> tuple[int, int, float]:
    """Keep ``streams`` streams busy; stream i starts after a random delay in [0, stagger) s, as
    arrivals would, so streams of equal length do not all get their tokens at the same instant."""
    rng = random.Random(1)
    body = json.dumps(
        {"messages": [{"role": "user", "content": "benchmark"}], "max_tokens": max_tokens, "stream": True}
    ).encode()
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    loop = asyncio.get_running_loop()
    counts = [0, 0]
    t0 = time.monotonic()
    protos = []
    # Count tokens over the steady part only: after every stream has started, until the stop time.
    marks: list[int] = []
    loop.call_later(stagger, lambda: marks.append(counts[0] - counts[1]))
    loop.call_later(seconds, lambda: marks.append(counts[0] - counts[1]))
    for _ in range(streams):
        delay = rng.uniform(0, stagger)

        def factory(delay=delay):
            return Stream(request, t0 + seconds, counts, delay)

        _, proto = await loop.create_connection(factory, "127.0.0.1", port)
        protos.append(proto)
    await asyncio.wait_for(asyncio.gather(*(p.done for p in protos)), timeout=seconds + 120)
    if len(marks) < 2:
        raise SystemExit("the run ended before its steady window; raise --seconds above --stagger")
    # the role chunk carries no token: one event per finished request is subtracted
    return marks[1] - marks[0], counts[1], seconds - stagger


def run_case(
    profile: str,
    streams: int,
    seconds: float,
    max_tokens: int,
    server_core: int,
    stagger: float,
    extra: list[str],
) -> dict:
    port = free_port()
    cmd = [sys.executable, "-m", "harness.cli", "practice", "--profile", profile, "--port", str(port), *extra]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        ps = psutil.Process(proc.pid)
        ps.cpu_affinity([server_core])
        root = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                requests.get(root + "/health", timeout=0.5)
                break
            except requests.RequestException:
                time.sleep(0.05)
        requests.post(root + "/practice/reset", timeout=5)
        spun0 = requests.get(root + "/practice/timing", timeout=5).json()["spun_s"]
        cpu0, t0 = ps.cpu_times(), time.monotonic()
        tokens, finished, wall = asyncio.run(drive(port, streams, seconds, max_tokens, stagger))
        cpu1, elapsed = ps.cpu_times(), time.monotonic() - t0
        timing = requests.get(root + "/practice/timing", timeout=10).json()
    finally:
        proc.terminate()
        proc.wait(10)
    cpu = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / elapsed
    work = cpu - (timing["spun_s"] - spun0) / elapsed  # spinning to a deadline is waiting, not work
    ms = lambda v: None if v is None else round(v * 1000, 3)  # noqa: E731
    return {
        "profile": profile,
        "streams": streams,
        "requests": finished,
        "tokens/s (steady)": round(tokens / wall),
        "server CPU": f"{cpu:.0%}",
        "CPU less spin": f"{work:.0%}",
        "late mean ms": ms(timing["lateness_mean_s"]),
        "late p99 ms": ms(timing["lateness_p99_s"]),
        "late max ms": ms(timing["lateness_max_s"]),
        "gc max ms": ms(timing["gc_pause_max_s"]),
        "re-anchors": timing["behind_resets"],
        "step late p50/p99 ms": ""
        if timing["step_late_p50_s"] is None
        else f"{ms(timing['step_late_p50_s'])}/{ms(timing['step_late_p99_s'])}",
        "step spread p50/p99 ms": ""
        if timing["step_spread_p50_s"] is None
        else f"{ms(timing['step_spread_p50_s'])}/{ms(timing['step_spread_p99_s'])}",
    }


# The targets, each on one core: (profile, streams, field, limit in ms).
TARGETS = [
    ("fleet", 64, "late p99 ms", 2.0),
    ("ruler", 256, "late mean ms", 1.0),
    ("ruler", 256, "late p99 ms", 5.0),
]


def verdicts(rows: list[dict]) -> list[str]:
    """One line per target whose row was run: the measured value against the limit."""
    lines = []
    for profile, streams, key, limit in TARGETS:
        for row in rows:
            if row["profile"] == profile and row["streams"] == streams and row[key] is not None:
                met = "met" if row[key] < limit else "NOT met"
                lines.append(
                    f"target {profile} {streams} streams {key.replace(' ms', '')} < {limit:g} ms: "
                    f"{row[key]:g} ms, {met}"
                )
    return lines


def machine() -> str:
    """The CPU, core count and kernel, so a pasted table says where it was measured."""
    model = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--streams", default="1,16,64,256")
    parser.add_argument("--profiles", default="fleet,ruler")
    parser.add_argument(
        "--stagger", type=float, default=1.0, help="spread stream starts over this many seconds"
    )
    parser.add_argument(
        "--no-uvloop", action="store_true", help="run the server on the standard asyncio loop"
    )
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    server_core, client_core = cores[0], cores[-1]
    psutil.Process().cpu_affinity([client_core])
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    rows = []
    for profile in args.profiles.split(","):
        for n in (int(x) for x in args.streams.split(",")):
            extra = ["--no-uvloop"] if args.no_uvloop else []
            row = run_case(profile, n, args.seconds, 128, server_core, args.stagger, extra)
            print(
                f"  {profile} {n} streams: {row['tokens/s (steady)']} tok/s, p99 {row['late p99 ms']} ms",
                file=sys.stderr,
            )
            rows.append(row)
    print(tabulate(rows, headers="keys", tablefmt="github"))
    print(
        f"\nserver pinned to core {server_core}, client to core {client_core}; {args.seconds:g} s per row; "
        f"stream starts spread over {args.stagger:g} s; "
        "lateness = time written to the socket minus scheduled time, per token event "
        "(server ground truth)"
    )
    print(f"machine: {machine()}")
    for line in verdicts(rows):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
