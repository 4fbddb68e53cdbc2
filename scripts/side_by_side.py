#!/usr/bin/env python3
"""Our client against a minimal reference client, on the same server in one run: prints a table.

The practice server's ``ruler`` profile (first token 50 ms after it has read a request, then one
every 10 ms) runs pinned to one core; each client, in turn, runs pinned to the other, as the lab's
burst: every user starts at once and sends its requests one after another. For every request, the
TTFT the client reported is compared with the server's own (its first write minus its read of
the request, on the same monotonic clock); the excess is what the client added. Clients:

* ``harness sweep`` (this project's client, as a user runs it);
* ``scripts/reference_client.py`` (asyncio, standard library: what a careful script does).

    .venv/bin/python scripts/side_by_side.py [--concurrency 1,16,64] [--rounds 4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests
from tabulate import tabulate

from harness.engines.ports import free_port

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def pinned(core: int):
    return lambda: os.sched_setaffinity(0, {core})


def start_server(core: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [PY, "-m", "harness.cli", "practice", "--profile", "ruler", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        preexec_fn=pinned(core),
    )
    root = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            requests.get(root + "/health", timeout=0.5)
            return proc, root
        except requests.RequestException:
            time.sleep(0.05)
    proc.terminate()
    raise SystemExit("the practice server did not start")


def ours(root: str, model: str, c: int, rounds: int, core: int) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        book = Path(tmp) / "book.md"
        cmd = [PY, "-m", "harness.cli.entry", "sweep", "--base-url", root + "/v1", "--model", model]
        cmd += ["--concurrency", str(c), "--requests", str(c * rounds), "--max-tokens", "128"]
        cmd += ["--prompt-set", "mixed", "--warmup", "0", "--labbook", str(book), "--label", f"c{c}"]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, preexec_fn=pinned(core))
        if done.returncode != 0:
            raise SystemExit(f"harness sweep failed at c={c}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        rows = [json.loads(line) for line in book.with_suffix(".samples.jsonl").read_text().splitlines()]
    keep = ("ttft_s", "departed_monotonic_s")
    return [{"id": r["request_id"], **{k: r[k] for k in keep}} for r in rows if r["ok"]]


def reference(root: str, model: str, c: int, rounds: int, core: int) -> list[dict]:
    cmd = [PY, str(ROOT / "scripts/reference_client.py"), "--url", root, "--model", model]
    cmd += ["--concurrency", str(c), "--rounds", str(rounds)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, preexec_fn=pinned(core))
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def split_ms(root: str, rows: list[dict]) -> dict[str, list[float]]:
    """Per request, in ms: the excess (the client's TTFT minus the server's own), and its two
    parts: departure to the server's read of the request (the server's queue, and for a client
    that stamps before writing, its own writing), and the first token's arrival error (the
    client's first-token time minus the server's write)."""
    got: dict[str, list[float]] = {"excess": [], "to_read": [], "arrival": []}
    with requests.Session() as s:
        for r in rows:
            if r["id"] is None or r["ttft_s"] is None:
                continue
            truth = s.get(f"{root}/practice/truth/{r['id']}", timeout=10).json()
            if not truth.get("sent"):
                continue
            server_ttft = truth["sent"][0] - truth["received"]
            got["excess"].append((r["ttft_s"] - server_ttft) * 1000)
            got["to_read"].append((truth["received"] - r["departed_monotonic_s"]) * 1000)
            first = r["departed_monotonic_s"] + r["ttft_s"]
            got["arrival"].append((first - truth["sent"][0]) * 1000)
    return got


def pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * p // 100) - 1)]


def pair(x: float | None, y: float | None) -> str:
    def f(v):
        return "-" if v is None else f"{v:.2f}"

    return f"{f(x)} / {f(y)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    parser.add_argument("--concurrency", default="1,16,64")
    parser.add_argument(
        "--rounds", type=int, default=4, help="requests per user at each level (at least 24 requests a level)"
    )
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    server_core, client_core = cores[0], cores[-1]
    proc, root = start_server(server_core)
    rows = []
    try:
        model = requests.get(root + "/v1/models", timeout=5).json()["data"][0]["id"]
        for c in (int(x) for x in args.concurrency.split(",")):
            rounds = max(args.rounds, -(-24 // c))  # enough requests that a p90 is not the maximum
            a = split_ms(root, ours(root, model, c, rounds, client_core))
            b = split_ms(root, reference(root, model, c, rounds, client_core))
            row: dict = {"users (all at once)": c, "requests": f"{len(a['excess'])} / {len(b['excess'])}"}
            for p in (50, 90, 99):
                row[f"excess p{p} ours / ref ms"] = pair(pct(a["excess"], p), pct(b["excess"], p))
            x, y = pct(a["excess"], 90), pct(b["excess"], 90)
            row["p90 ratio ours/ref"] = None if not (x and y) else round(x / y, 2)
            row["to server's read p90 ms"] = pair(pct(a["to_read"], 90), pct(b["to_read"], 90))
            row["first-token arrival error p99 ms"] = pair(pct(a["arrival"], 99), pct(b["arrival"], 99))
            rows.append(row)
            print(
                f"  {c} users: excess p90 ours / reference {row['excess p90 ours / ref ms']} ms",
                file=sys.stderr,
            )
    finally:
        proc.terminate()
    print(tabulate(rows, headers="keys", tablefmt="github"))
    print(
        f"\nserver on core {server_core}, each client in turn on core {client_core}; excess = the TTFT "
        "the client reported minus the server's own (first write - its read of the request), per "
        "request, made of: departure to the server's read (the server's queue; for the reference, "
        "which stamps before writing, its writing too) and the first token's arrival error (client "
        "time - server write); below 1 the ratio means our client adds less than the reference"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
