#!/usr/bin/env python3
"""How well the open loop keeps its schedule (a benchmark, not a test): prints a table.

The practice server's ``ruler`` profile (no seats: first token 50 ms after a request arrives,
then one every 10 ms) runs pinned to one core, the Locust client as ``harness sweep`` drives it
on the other. Cases:

* ``rate R``: evenly spaced arrivals at R requests/s;
* ``burst K``: gamma gaps of shape K at the same rate (``--burstiness``);
* ``trace``: a plain trace of the same rate replayed at its timestamps (``--trace``).

For each: the schedule lateness as the client stamped it (departure, just before the write,
minus the scheduled time), the same against the server's ground truth (the moment the server
received the request, minus the scheduled time: it includes the trip through the loopback and
the server's read), and the coefficient of variation of the gaps between departures beside the
schedule's own (its sample of gaps) and the one it was drawn with (1 / sqrt(K)).

    .venv/bin/python scripts/bench_workloads.py [--rate 50] [--requests 500] [--burstiness 0.5]
"""

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import requests  # noqa: E402
from tabulate import tabulate  # noqa: E402

from harness.workloads.schedules import coefficient_of_variation, expected_cv, gaps  # noqa: E402
from harness.measure.stats import percentile  # noqa: E402
from harness.workloads.traces import TracePlan, TraceRow  # noqa: E402
from harness.load import runner as loadgen  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_client import start_server  # noqa: E402


def ms(v):
    return None if v is None else round(v * 1000, 2)


def run_case(root: str, name: str, rate: float, count: int, burst: float | None, trace: bool) -> dict:
    wl = {"path": "/v1/chat/completions", "model": None, "prompts": ["benchmark"], "max_tokens": 8}
    kw: dict = {"burstiness": burst, "seed": 11}
    if trace:
        rows = tuple(TraceRow(i / rate, 16, 8) for i in range(count))
        offsets, jobs = TracePlan(rows, "bench", "plain").schedule()
        kw.update(offsets=offsets, trace=jobs)
    result = loadgen.run_open_level(root, wl, rate, count, False, timeout=30, **kw)
    late = [s.tags["schedule_lateness_s"] for s in result.samples if "schedule_lateness_s" in s.tags]
    session = requests.Session()
    server_late = []
    for s in result.samples:
        if s.ok and "schedule_lateness_s" in s.tags:
            due = s.t_departed - s.tags["schedule_lateness_s"]
            truth = session.get(f"{root}/practice/truth/{s.request_id}", timeout=10).json()
            server_late.append(truth["received"] - due)
    cv = coefficient_of_variation(gaps([s.t_departed for s in result.samples if s.t_sent is not None]))
    due = [
        s.t_departed - s.tags["schedule_lateness_s"]
        for s in result.samples
        if "schedule_lateness_s" in s.tags
    ]
    drawn = coefficient_of_variation(gaps(due))
    return {
        "case": name,
        "requests": len(result.samples),
        "ok": sum(s.ok for s in result.samples),
        "client CPU": f"{result.client_cpu:.0%}",
        "lateness p50 ms": ms(percentile(late, 50)),
        "lateness p99 ms": ms(percentile(late, 99)),
        "lateness max ms": ms(max(late, default=None)),
        "received late p50 ms": ms(percentile(server_late, 50)),
        "received late p99 ms": ms(percentile(server_late, 99)),
        "gap CV": None if cv is None else round(cv, 3),
        "schedule's CV": None if drawn is None else round(drawn, 3),
        "CV drawn with": round(expected_cv(burst, False), 3),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    ap.add_argument("--rate", type=float, default=50.0)
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--burstiness", type=float, default=0.5)
    args = ap.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    proc, root = start_server("ruler", cores[0], [])
    if len(cores) > 1:
        os.sched_setaffinity(0, cores[1:])
    try:
        rows = [
            run_case(root, f"rate {args.rate:g}/s", args.rate, args.requests, None, False),
            run_case(root, f"burst K={args.burstiness:g}", args.rate, args.requests, args.burstiness, False),
            run_case(root, f"trace {args.rate:g}/s", args.rate, args.requests, None, True),
        ]
    finally:
        proc.terminate()
        proc.wait(10)
    print(tabulate(rows, headers="keys"))
    print(f"\nsqrt(2) = {math.sqrt(2):.3f}; wanted: lateness p99 < 5 ms at 50/s, CV near sqrt(2) at K 0.5")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
