"""``harness demo`` (``make demo``): the practice server and a crowd-size sweep, no GPU needed.

Starts the kit practice server (8 seats) on a free port, sends crowds of 1, 2, 4, 8 and 16
people (each person sends a request, waits for the whole answer, and sends the next), prints
the table the course's chart is drawn from, and stops the server.
"""

from __future__ import annotations

import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from tabulate import tabulate

from harness.io.http import stream_chat
from harness.run.launchers.host import HostLauncher
from harness.core.stats import percentile
from harness.core.stream import Sample


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="practice server + crowd-size sweep, printed as a table (no GPU needed)")
    p.add_argument("--crowds", default="1,2,4,8,16", help="crowd sizes (comma-separated)")
    p.add_argument("--rounds", type=int, default=2, help="requests each person sends per crowd size")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--promise", type=float, default=0.5, help="p95 first-token wait promised, seconds")
    p.add_argument("--log-dir", default="runs/demo")
    p.set_defaults(func=run)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def crowd(base_url: str, people: int, rounds: int, max_tokens: int) -> tuple[list[Sample], float]:
    def person(i: int) -> list[Sample]:
        out = []
        for r in range(rounds):
            body = {
                "messages": [{"role": "user", "content": f"person {i} round {r}: how do seats work?"}],
                "max_tokens": max_tokens,
            }
            out.append(stream_chat(base_url, body, timeout=60))
        return out

    t0 = time.perf_counter()
    with ThreadPoolExecutor(people) as pool:
        samples = [s for batch in pool.map(person, range(people)) for s in batch]
    return samples, time.perf_counter() - t0


def run(args) -> int:
    from pathlib import Path

    crowds = [int(x) for x in args.crowds.split(",") if x.strip()]
    port = _free_port()
    launcher = HostLauncher(
        argv=[
            sys.executable,
            "-m",
            "harness.cli",
            "practice",
            "--profile",
            "kit",
            "--port",
            str(port),
            "--log-file",
            str(Path(args.log_dir) / "practice.log"),
        ],
        host="127.0.0.1",
        port=port,
        health_url=f"http://127.0.0.1:{port}/health",
        log_path=Path(args.log_dir) / "practice.out",
    )
    launcher.start(timeout=30)
    base = f"http://127.0.0.1:{port}/v1"
    rows, capacity = [], None
    try:
        print(
            f"practice server (kit profile, 8 seats) on {base}; {args.rounds} request(s) per person, "
            f"up to {args.max_tokens} tokens out"
        )
        for people in crowds:
            samples, wall = crowd(base, people, args.rounds, args.max_tokens)
            ok = [s for s in samples if s.ok]
            ttfts = [s.ttft for s in ok]
            tpots = [s.tpot for s in ok if s.tpot is not None]
            p95 = percentile(ttfts, 95)
            rows.append(
                {
                    "crowd": people,
                    "requests": len(samples),
                    "ok": len(ok),
                    "total out tok/s": round(sum(s.output_tokens for s in ok) / wall, 1),
                    "per person tok/s": round(1 / percentile(tpots, 50), 1) if tpots else None,
                    "TTFT p50 s": round(percentile(ttfts, 50), 3) if ttfts else None,
                    "TTFT p95 s": round(p95, 3) if p95 is not None else None,
                    "prompt in": percentile([s.prompt_tokens for s in ok if s.prompt_tokens], 50),
                }
            )
            print(
                f"  crowd {people:>3}: {rows[-1]['total out tok/s']} tok/s, "
                f"TTFT p95 {rows[-1]['TTFT p95 s']} s",
                flush=True,
            )
            if p95 is not None and p95 <= args.promise and len(ok) == len(samples):
                capacity = people
    finally:
        launcher.stop()
    print()
    print(
        f"Test conditions: about {rows[0]['prompt in']} tokens in / up to {args.max_tokens} out; "
        f"crowds {args.crowds} at once; promise: p95 first token within {args.promise:g} s"
    )
    print(tabulate(rows, headers="keys", tablefmt="github"))
    if capacity:
        print(
            f"\nOne copy holds {capacity} people within the promise; 120 people need "
            f"{-(-120 // capacity)} copies."
        )
    else:
        print("\nNo crowd size met the promise.")
    return 0
