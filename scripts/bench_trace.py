#!/usr/bin/env python3
"""How closely trace replay keeps its departures (a benchmark, not a test): prints a table.

For each rate: a Mooncake trace made by ``scripts/make_traces.py --requests N --rate R
--max-blocks 4 --min-output 4 --max-output 16`` (Poisson arrivals, seeded), replayed by ``harness
sweep --trace FILE --telemetry none`` against ``harness practice --profile fleet``, both started
here as a person would start them (separate processes, not pinned: they share this machine's
cores). The figures come from what the sweep recorded: each request's departure lateness (its
departure, stamped just before the write, minus its time on the schedule) from the samples file,
the client's CPU share, and whether the level was marked client-limited (with its note).

    .venv/bin/python scripts/bench_trace.py [--rates 50,100] [--requests 1000] [--runs 1]
    make bench-trace

The machine's 1-minute load average is printed beside each row: another process on the same
cores delays the client's wake-ups, and the tail shows it. The issue's aim (issue 37 item 3):
p99 under 2 ms at 100 requests/s, and under 1 ms for a 1,000-request trace.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests
from tabulate import tabulate

from harness.core.records import LAB_ID
from harness.core.stats import percentile
from harness.io.notebook import read_records

ROOT = Path(__file__).resolve().parent.parent
HARNESS = [sys.executable, "-m", "harness.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_practice(profile: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [*HARNESS, "practice", "--profile", profile, "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            requests.get(base + "/health", timeout=0.5)
            return proc, base + "/v1"
        except requests.RequestException:
            time.sleep(0.05)
    proc.terminate()
    raise SystemExit("the practice server did not start")


def make_trace(out: Path, rate: float, count: int) -> Path:
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "make_traces.py"),
            *("--out", str(out), "--conversations-out", str(out)),
            *("--requests", str(count), "--rate", f"{rate:g}"),
            *("--max-blocks", "4", "--min-output", "4", "--max-output", "16"),
        ],
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    return out / "mooncake-small.jsonl"


def replay(base_url: str, trace: Path, book: Path) -> tuple[dict, list[dict]]:
    """One ``harness sweep --trace`` run: its level record and its samples."""
    out = subprocess.run(
        [
            *HARNESS,
            "sweep",
            *("--base-url", base_url, "--model", "practice-model"),
            *("--trace", str(trace), "--telemetry", "none", "--labbook", str(book)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"harness sweep failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    found = read_records(book, "level", select=lambda o: o.get("lab") == LAB_ID and "concurrency" in o)
    if not found.records:
        raise SystemExit(f"no level record in {book}: {found.warnings}")
    level = found.records[-1]
    rows = [json.loads(line) for line in book.with_suffix(".samples.jsonl").read_text().splitlines()]
    return level, rows


def ms(v: float | None) -> float | None:
    return None if v is None else round(v * 1000, 3)


def row(rate: float, level: dict, samples: list[dict], load_before: float) -> dict:
    late = [r["schedule_lateness_s"] for r in samples if r.get("schedule_lateness_s") is not None]
    drawn = level.get("rate_rps")  # the trace's own mean rate, first request to last
    return {
        "rate /s": f"{rate:g} (trace {drawn:.3g})" if drawn else f"{rate:g}",
        "requests": len(samples),
        "ok": level.get("completed"),
        "lateness p50 ms": ms(percentile(late, 50)),
        "p99 ms": ms(percentile(late, 99)),
        "max ms": ms(max(late, default=None)),
        "record p99 ms": ms((level.get("schedule_lateness_s") or {}).get("p99")),
        "client CPU": None if level.get("client_cpu") is None else f"{level['client_cpu']:.0%}",
        "client-limited": level.get("client_limited"),
        "load 1 min": f"{load_before:.2f} / {os.getloadavg()[0]:.2f}",
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="50,100", help="arrival rates of the traces, comma-separated")
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=1, help="replays of each trace")
    ap.add_argument("--profile", default="fleet", help="the practice server's profile")
    args = ap.parse_args()
    rates = [float(r) for r in args.rates.split(",") if r.strip()]
    table, notes = [], []
    with tempfile.TemporaryDirectory(prefix="bench-trace-") as tmp:
        proc, base_url = start_practice(args.profile)
        try:
            for rate in rates:
                trace = make_trace(Path(tmp) / f"r{rate:g}", rate, args.requests)
                for run in range(args.runs):
                    load = os.getloadavg()[0]
                    level, samples = replay(base_url, trace, Path(tmp) / f"r{rate:g}-{run}.md")
                    table.append(row(rate, level, samples, load))
                    if level.get("schedule_note"):
                        notes.append(f"{rate:g}/s run {run + 1}: {level['schedule_note']}")
        finally:
            proc.terminate()
            proc.wait(10)
    print(tabulate(table, headers="keys"))
    print(
        f"\n{args.requests}-request Mooncake traces (make_traces.py --max-blocks 4 --min-output 4 "
        f"--max-output 16), practice profile {args.profile}, {os.cpu_count()} cores; load: the "
        "1-minute load average before / after the replay. Aim: p99 < 2 ms at 100/s, < 1 ms for a "
        "1,000-request trace."
    )
    for note in notes:
        print(note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
