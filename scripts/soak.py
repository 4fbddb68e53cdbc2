#!/usr/bin/env python3
"""The soak (``make soak``): one long level against the practice server, memory watched.

The practice server (profile fleet) runs on a core of its own and ``harness sweep`` holds 256
streams against it for an hour (``--minutes``; ``SOAK_MINUTES`` through make) on the other
cores. Both processes' RSS is read every 5 s. The table says each one's RSS once warm (at 5
minutes, or half of a shorter run) and at the load's end, the requests accounted (ok + failed =
sent, each one a line of the samples file) and the level's figures beside a 2-minute run's. A
process that grew more than 10 % after warming up fails the soak, named (exit 1). The server is
warm only once its store of the last requests' ground truth is full: a run too short for that
says so and judges the client alone.

    .venv/bin/python scripts/soak.py [--minutes 60] [--streams 256] [--out runs/soak]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import requests
from tabulate import tabulate

from harness.engines.ports import free_port
from harness.measure.stats import percentile
from harness.practice.truth import TRUTH_KEEP

ROOT = Path(__file__).resolve().parents[1]
GROWTH_LIMIT = 0.10  # growth past this, from warm to the load's end, fails the soak
WARM_S = 300.0  # when a process counts as warm (or half of a shorter run)
MB = 1e6


@dataclass
class Run:
    """One level's processes and what was read of them."""

    label: str
    seconds: float
    rss: list[tuple[float, float, float]] = field(default_factory=list)  # (time, client MB, server MB)
    record: dict = field(default_factory=dict)
    window: tuple[float, float] | None = None  # the load's first departure and last end
    lines: int = 0  # this level's lines in the samples file
    ttft: array = field(default_factory=lambda: array("d"))
    e2e: array = field(default_factory=lambda: array("d"))
    server_done: int | None = None  # requests the server finished (its own counter)


def cores() -> tuple[list[int] | None, list[int] | None, str]:
    """(server's cores, client's cores, how they were pinned) on the cores this process may use."""
    usable = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(usable) < 2:
        return None, None, "not pinned (fewer than 2 cores, or no affinity on this system)"
    how = "taskset" if shutil.which("taskset") else "psutil affinity"
    return usable[-1:], usable[:-1], f"server on core {usable[-1]}, client on {usable[:-1]} ({how})"


def start(argv: list[str], on: list[int] | None, **kw) -> subprocess.Popen:
    """``argv`` started on the cores ``on`` (taskset where it is installed, else psutil)."""
    if on and shutil.which("taskset"):
        argv = ["taskset", "-c", ",".join(map(str, on)), *argv]
    proc = subprocess.Popen(argv, cwd=ROOT, **kw)
    if on and not shutil.which("taskset"):
        psutil.Process(proc.pid).cpu_affinity(on)
    return proc


def rss_mb(proc: psutil.Process) -> float:
    try:
        return proc.memory_info().rss / MB
    except psutil.Error:
        return float("nan")


def wait_up(root: str) -> None:
    for _ in range(600):
        try:
            requests.get(root + "/health", timeout=0.5)
            return
        except requests.RequestException:
            time.sleep(0.1)
    raise SystemExit(f"soak: the practice server at {root} never answered /health")


def server_done(root: str) -> int | None:
    """The requests the practice server finished (vLLM's request_success_total it publishes)."""
    for line in requests.get(root + "/metrics", timeout=10).text.splitlines():
        if line.startswith("vllm:request_success_total"):
            return int(float(line.split()[-1]))
    return None


def run_level(run: Run, args, out: Path, pins) -> Run:
    """A practice server and one timed level against it, RSS read every ``args.every`` s."""
    server_cores, client_cores, _ = pins
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    harness = [sys.executable, "-m", "harness.cli"]
    log = open(out / f"{run.label}.server.log", "w")  # noqa: SIM115  (closed below)
    server = start(
        [*harness, "practice", "--profile", "fleet", "--port", str(port)],
        server_cores,
        stdout=log,
        stderr=log,
    )
    book = out / f"{run.label}.md"
    try:
        wait_up(root)
        sweep = [*harness, "sweep", "--base-url", root, "--model", "local-chat", "--label", run.label]
        sweep += [
            "--concurrency",
            str(args.streams),
            "--duration",
            str(int(run.seconds)),
            "--max-tokens",
            "64",
        ]
        sweep += ["--labbook", str(book), "--warmup", "1"]
        with open(out / f"{run.label}.sweep.log", "w") as said:
            client = start(sweep, client_cores, stdout=said, stderr=subprocess.STDOUT)
            watched, ps = psutil.Process(client.pid), psutil.Process(server.pid)
            while client.poll() is None:
                run.rss.append((time.perf_counter(), rss_mb(watched), rss_mb(ps)))
                time.sleep(args.every)
        if client.returncode:
            raise SystemExit(
                f"soak: the sweep failed (exit {client.returncode}); see {out / (run.label + '.sweep.log')}"
            )
        run.server_done = server_done(root)
    finally:
        server.terminate()
        server.wait(10)
        log.close()
    read_level(run, book)
    return run


def read_level(run: Run, book: Path) -> None:
    """The level's record, and its lines of the samples file read one at a time (an hour's is
    hundreds of megabytes): their count, the load's window, and TTFT and end of each ok one."""
    levels = [json.loads(line) for line in book.read_text().splitlines() if line.startswith('{"lab"')]
    run.record = next(r for r in reversed(levels) if r.get("concurrency") and r.get("label") == run.label)
    first = last = None
    with open(book.with_suffix(".samples.jsonl")) as rows:
        for line in rows:
            row = json.loads(line)
            if row.get("run_id") != run.record["run_id"]:
                continue
            run.lines += 1
            sent = row["departed_monotonic_s"]
            first = sent if first is None else min(first, sent)
            end = sent + (row["end_s"] or 0.0)
            last = end if last is None else max(last, end)
            if row["ok"] and row["ttft_s"] is not None:
                run.ttft.append(row["ttft_s"])
                run.e2e.append(row["end_s"])
    run.window = (first, last) if first is not None else None


def memory(run: Run, warm_s: float) -> dict:
    """Each process's RSS once warm and at the load's end (the last reading inside the load's
    window), their growth, and the client's most while the level's figures were computed. The
    server keeps the ground truth of its last TRUTH_KEEP requests, so it is warm only once that
    store is full; in a run too short to fill it its growth is that store filling, not judged
    (``server_unjudged`` says so)."""
    t0 = run.window[0] if run.window else run.rss[0][0]
    end = run.window[1] if run.window else run.rss[-1][0]
    inside = [r for r in run.rss if t0 <= r[0] <= end] or run.rss
    warm = next((r for r in inside if r[0] - t0 >= warm_s), inside[-1])
    last = inside[-1]
    rate = run.record.get("requests_per_s") or 0
    filled_s = TRUTH_KEEP / rate if rate else float("inf")  # when the server's truth store is full
    server_warm = next((r for r in inside if r[0] - t0 >= max(warm_s, filled_s)), None)
    after = [r[1] for r in run.rss if r[0] > end]
    return {
        "warm_at_s": round(warm[0] - t0),
        "end_at_s": round(last[0] - t0),
        "client": (warm[1], last[1]),
        "server": ((server_warm or warm)[2], last[2]),
        "server_warm_at_s": round((server_warm or warm)[0] - t0),
        "server_unjudged": None
        if server_warm is not None and server_warm is not last
        else f"the server keeps the ground truth of its last {TRUTH_KEEP:,} requests, a store still "
        f"filling at the load's end ({run.record.get('requests', 0):,} sent): its growth is that store, "
        f"not judged in a run this short (it is from about {filled_s / 60:.0f} minutes at this rate)",
        "client_figuring_peak": max(after) if after else None,
    }


def growth(pair: tuple[float, float]) -> float:
    return (pair[1] - pair[0]) / pair[0]


FIGURES = (
    ("requests", None),
    ("completed", None),
    ("failed", None),
    ("requests_per_s", None),
    ("output_tokens_per_s", None),
    ("mean_in_flight", None),
    ("ttft_s", "p50"),
    ("ttft_s", "p99"),
    ("tpot_s", "p50"),
    ("tpot_s", "p99"),
    ("itl_s", "p99"),
    ("e2e_s", "p50"),
    ("e2e_s", "p99"),
)


def figure(record: dict, name: str, part: str | None):
    value = record.get(name)
    return value.get(part) if part and isinstance(value, dict) else value


def from_samples(run: Run) -> list[str]:
    """Where the record's TTFT and end-to-end percentiles disagree with its samples file's (the
    file keeps times to the microsecond, the record to 0.1 ms): [] when they agree."""
    wrong = []
    for name, values in (("ttft_s", run.ttft), ("e2e_s", run.e2e)):
        for p in (50, 90, 99):
            mine, recorded = percentile(values, p), run.record[name][f"p{p}"]
            if mine is None or recorded is None or abs(mine - recorded) > 0.5e-4 + 1e-6:
                wrong.append(f"{name} p{p}: the samples give {mine}, the record {recorded}")
    return wrong


def report(soak: Run, base: Run | None, pins, args) -> int:
    """Print the soak's table; the exit status: 1 when it failed, naming why."""
    mem = memory(soak, min(WARM_S, soak.seconds / 2))
    r = soak.record
    print(
        f"\nsoak: {args.streams} streams for {soak.seconds / 60:g} min against the practice server "
        f"(fleet); {pins[2]}"
    )
    rows = [
        [
            f"RSS at {mem['warm_at_s']} s (warm; the server's at {mem['server_warm_at_s']} s), MB",
            f"{mem['client'][0]:.1f}",
            f"{mem['server'][0]:.1f}",
        ],
        [
            f"RSS at {mem['end_at_s']} s (the load's end), MB",
            f"{mem['client'][1]:.1f}",
            f"{mem['server'][1]:.1f}",
        ],
        [
            "growth after warm",
            f"{growth(mem['client']):+.1%}",
            "not judged" if mem["server_unjudged"] else f"{growth(mem['server']):+.1%}",
        ],
    ]
    if mem["client_figuring_peak"] is not None:
        rows.append(["most while the figures were computed, MB", f"{mem['client_figuring_peak']:.1f}", ""])
    print(tabulate(rows, headers=["memory", "client (harness sweep)", "server (practice)"]))
    accounted = r["completed"] + r["failed"]
    print(
        f"\nrequests: sent {r['requests']:,} = ok {r['completed']:,} + failed {r['failed']:,} "
        f"(cancelled {r['cancelled']}); samples file {soak.lines:,} lines; the server finished "
        f"{soak.server_done if soak.server_done is not None else 'an unknown number'} "
        "(with the warm-up and the proof)"
    )
    table = [
        [f"{n} {p or ''}".strip(), figure(r, n, p), figure(base.record, n, p) if base else ""]
        for n, p in FIGURES
    ]
    print()
    print(
        tabulate(
            table,
            headers=["figure", f"soak ({soak.seconds / 60:g} min)", "2-minute run" if base else "(none run)"],
        )
    )
    if mem["server_unjudged"]:
        print(f"soak: {mem['server_unjudged']}")
    judged = ("client",) if mem["server_unjudged"] else ("client", "server")
    failures = [
        f"the {who} grew {growth(mem[who]):+.1%} after warming up (limit {GROWTH_LIMIT:.0%})"
        for who in judged
        if growth(mem[who]) > GROWTH_LIMIT
    ]
    if accounted != r["requests"] or soak.lines != r["requests"]:
        failures.append(
            f"requests not accounted: {r['requests']} sent, {accounted} ok or failed, "
            f"{soak.lines} in the samples file"
        )
    failures += from_samples(soak)
    if failures:
        print("\nsoak: FAIL: " + "; ".join(failures))
        return 1
    print(
        "\nsoak: PASS: memory flat after warming up, every request accounted, the record's "
        "percentiles are its samples'"
    )
    return 0


def chart(rss_csv: Path, png: Path) -> None:
    """Both processes' RSS over the soak, one line each, with the warm mark: flat is the pass."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [line.split(",") for line in rss_csv.read_text().splitlines()[1:]]
    minutes = [float(r[0]) / 60 for r in rows]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.plot(minutes, [float(r[1]) for r in rows], label="client (harness sweep)")
    ax.plot(minutes, [float(r[2]) for r in rows], label="server (practice)")
    ax.axvline(WARM_S / 60, color="grey", linestyle=":", label="warm (5 min)")
    ax.set_xlabel("minutes into the level")
    ax.set_ylabel("RSS, MB")
    ax.set_ylim(bottom=0)
    ax.set_title("The soak: memory at 256 streams")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    ap.add_argument("--minutes", type=float, default=float(os.environ.get("SOAK_MINUTES") or 60))
    ap.add_argument("--streams", type=int, default=256)
    ap.add_argument("--every", type=float, default=5.0, help="seconds between RSS readings")
    ap.add_argument("--baseline-minutes", type=float, default=2.0, help="the short run beside it (0: none)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "soak")
    args = ap.parse_args()
    if args.minutes <= 0 or args.streams <= 0:
        ap.error("--minutes and --streams must be positive")
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("soak*"):
        old.unlink()
    pins = cores()
    base = None
    if 0 < args.baseline_minutes < args.minutes:
        base = run_level(Run("soak-base", args.baseline_minutes * 60), args, args.out, pins)
    soak = run_level(Run("soak", args.minutes * 60), args, args.out, pins)
    with open(args.out / "soak.rss.csv", "w") as f:
        f.write("t_s,client_mb,server_mb\n")
        f.writelines(f"{t - soak.rss[0][0]:.1f},{c:.2f},{s:.2f}\n" for t, c, s in soak.rss)
    chart(args.out / "soak.rss.csv", args.out / "soak.rss.png")
    print(f"soak: RSS over time in {args.out / 'soak.rss.csv'} and {args.out / 'soak.rss.png'}")
    return report(soak, base, pins, args)


if __name__ == "__main__":
    sys.exit(main())
