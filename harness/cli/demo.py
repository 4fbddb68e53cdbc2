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
from pathlib import Path

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
    crowds = [int(x) for x in args.crowds.split(",") if x.strip()]
    port = _free_port()
    launcher = _practice_launcher(port, Path(args.log_dir))
    launcher.start(timeout=30)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        print(
            f"practice server (kit profile, 8 seats) on {base}; {args.rounds} request(s) per person, "
            f"up to {args.max_tokens} tokens out"
        )
        rows, capacity = _sweep(args, base, crowds)
    finally:
        launcher.stop()
    _print_summary(args, rows, capacity)
    return 0


def _practice_launcher(port: int, log_dir: Path) -> HostLauncher:
    """The kit practice server on ``port``, its log and output kept in ``log_dir``."""
    return HostLauncher(
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
            str(log_dir / "practice.log"),
        ],
        host="127.0.0.1",
        port=port,
        health_url=f"http://127.0.0.1:{port}/health",
        log_path=log_dir / "practice.out",
    )


def _sweep(args, base: str, crowds: list[int]) -> tuple[list[dict], int | None]:
    """One table row per crowd size (printed as it finishes), and the largest crowd that kept the
    promise with no failures."""
    rows: list[dict] = []
    capacity = None
    for people in crowds:
        samples, wall = crowd(base, people, args.rounds, args.max_tokens)
        row, p95 = _crowd_row(people, samples, wall)
        rows.append(row)
        print(
            f"  crowd {people:>3}: {row['total out tok/s']} tok/s, TTFT p95 {row['TTFT p95 s']} s",
            flush=True,
        )
        if p95 is not None and p95 <= args.promise and row["ok"] == len(samples):
            capacity = people
    return rows, capacity


def _crowd_row(people: int, samples: list[Sample], wall: float) -> tuple[dict, float | None]:
    """The table row for one crowd size, and its TTFT p95 unrounded."""
    ok = [s for s in samples if s.ok]
    ttfts = [s.ttft for s in ok]
    tpots = [s.tpot for s in ok if s.tpot is not None]
    p95 = percentile(ttfts, 95)
    row = {
        "crowd": people,
        "requests": len(samples),
        "ok": len(ok),
        "total out tok/s": round(sum(s.output_tokens for s in ok) / wall, 1),
        "per person tok/s": round(1 / percentile(tpots, 50), 1) if tpots else None,
        "TTFT p50 s": round(percentile(ttfts, 50), 3) if ttfts else None,
        "TTFT p95 s": round(p95, 3) if p95 is not None else None,
        "prompt in": percentile([s.prompt_tokens for s in ok if s.prompt_tokens], 50),
    }
    return row, p95


def _print_summary(args, rows: list[dict], capacity: int | None) -> None:
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
