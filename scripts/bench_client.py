#!/usr/bin/env python3
"""How precisely the load generator measures (a benchmark, not a test): prints a table.

The practice server's ``ruler`` profile (first token 50 ms after a request arrives, then one
token every 10 ms, 128 tokens, one SSE event per write) runs pinned to one core; this process,
the Locust client as ``harness sweep`` drives it, runs pinned to the other. For each number of
concurrent streams the client runs a closed loop for a fixed time; then every request's
measured token times are compared with the times the server wrote those tokens (its ground
truth, on the same monotonic clock). Error = client time - server write time.

    .venv/bin/python scripts/bench_client.py [--seconds 8] [--streams 1,16,64,256,512,1024] [--strict]

The client's CPU is stated per token (``client µs/token``: CPU seconds of this process over the
tokens it read, in microseconds), so rows compare even where the server fell behind its schedule;
the server's own CPU and lateness (its writes against its schedule) say whether it kept up. The
soft limit on open files is raised to the hard one (1,024 streams need more than 1,024 sockets on
systems whose soft limit is 1,024), for this process and the server it starts.

Exit status 1 for a negative TTFT (the departure stamp followed a first token: a defect). Each
row's client-limit verdict is checked against the truth and a disagreement is reported with the
machine's load average; it fails the run only with ``--strict`` (for quiet, unshared cores), as
on a shared machine other work can delay this client's reads by a millisecond or more while
none of the signs the verdict reads shows it, or the reverse.
"""

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from contextlib import suppress  # noqa: E402
from pathlib import Path  # noqa: E402

import psutil  # noqa: E402
import requests  # noqa: E402
from tabulate import tabulate  # noqa: E402

from harness.load import distributed, runner as loadgen  # noqa: E402
from harness.core.levels import (  # noqa: E402
    aggregate,
    client_limit_note,
    client_limited,
    first_read_lags,
    level_stats,
)
from harness.core.records import Objectives  # noqa: E402
from harness.core.stats import percentile  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def start_server(profile: str, core: int, extra: list[str]) -> tuple[subprocess.Popen, str]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "practice", "--profile", profile, "--port", str(port), *extra],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    psutil.Process(proc.pid).cpu_affinity([core])
    root = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            requests.get(root + "/health", timeout=0.5)
            return proc, root
        except requests.RequestException:
            time.sleep(0.05)
    raise SystemExit("practice server did not start")


def ms(v):
    return None if v is None else round(v * 1000, 2)


def raise_open_files() -> int:
    """The soft limit on open files raised to the hard one (the server started after inherits it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        want = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        with suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def run_case(
    root: str, streams: int, seconds: float, distributed=None, burst: bool = False, server_pid: int = 0
) -> dict:
    requests.post(f"{root}/practice/reset", timeout=10)  # the server's lateness from this row on
    server = psutil.Process(server_pid) if server_pid else None
    s0 = server.cpu_times() if server else None
    t0 = time.monotonic()
    wl = {"path": "/v1/chat/completions", "model": None, "prompts": ["benchmark"], "max_tokens": 128}
    if burst:  # every user starts at once, as `harness sweep` starts a level: equal streams in lockstep
        result = loadgen.run_timed_level(
            root, wl, streams, seconds, timeout=60, spawn_rate=streams, ramp_s=0.0
        )
    elif distributed is not None:  # Locust workers: a request budget of about `seconds` of streaming per user
        result = distributed.level(streams, count=max(streams, int(streams * seconds / 1.33)), timeout=60)
    else:
        # users start over one second, as people would, so equal-length streams are not in lockstep
        result = loadgen.run_timed_level(
            root, wl, streams, seconds, timeout=60, spawn_rate=max(streams, 1), ramp_s=1.0
        )
    server_cpu = None
    if server is not None and s0 is not None:
        s1 = server.cpu_times()
        server_cpu = (s1.user + s1.system - s0.user - s0.system) / (time.monotonic() - t0)
    late = requests.get(f"{root}/practice/timing", timeout=10).json().get("lateness_p99_s")
    ok = [s for s in result.samples if s.ok]
    ttft_err, itl_err, send_gap, ttft_vs_server, send_delay = [], [], [], [], []
    ttfts = [s.ttft for s in ok if s.ttft is not None]
    writes = [s.t_written - s.t_sent for s in ok if s.t_written is not None and s.t_sent is not None]
    session = requests.Session()
    for s in ok:
        truth = session.get(f"{root}/practice/truth/{s.request_id}", timeout=10).json()
        sent = truth.get("sent") or []
        if not sent or len(sent) != len(s.token_times):
            continue
        # TTFT error: when the client saw the first token minus when the server wrote it
        ttft_err.append(s.t_first - sent[0])
        # ITL error: each gap as the client saw it minus the same gap as the server wrote it
        itl_err.extend(
            (b - a) - (wb - wa)
            for a, b, wa, wb in zip(s.token_times, s.token_times[1:], sent, sent[1:], strict=False)
        )
        send_gap.append(truth["received"] - s.t_departed)
        if s.send_delay is not None:
            send_delay.append(s.send_delay)
        # the reported TTFT minus the server's own (first write - its parse of the request)
        ttft_vs_server.append(s.ttft - (sent[0] - truth["received"]))
    tokens = sum(s.output_tokens or 0 for s in ok)
    # the sweep's own verdict, from what the client alone can see (no ground truth needed)
    level = aggregate(result.samples, streams, result.wall_s, 2.0, 0.1)
    limited = client_limited(  # with every sign the sweep's own verdict reads
        result.client_cpu,
        level["mean_in_flight"],
        streams,
        level["client_late_share"],
        level.get("client_first_late_share"),
    )
    return {
        "streams": streams,
        "requests": len(result.samples),
        "ok": len(ok),
        "tokens/s": round(tokens / result.wall_s),
        "client CPU": f"{result.client_cpu:.0%}",
        "client µs/token": round(result.client_cpu * result.wall_s / tokens * 1e6, 1) if tokens else None,
        "server CPU": "-" if server_cpu is None else f"{server_cpu:.0%}",
        "server late p99 ms": ms(late),
        "TTFT err p50 ms": ms(percentile(ttft_err, 50)),
        "TTFT err p99 ms": ms(percentile(ttft_err, 99)),
        "ITL err p50 ms": ms(percentile(itl_err, 50)),
        "ITL err p99 ms": ms(percentile(itl_err, 99)),
        "TTFT - server's p50 ms": ms(percentile(ttft_vs_server, 50)),
        "TTFT - server's p99 ms": ms(percentile(ttft_vs_server, 99)),
        "send delay p99 ms": ms(percentile(send_delay, 99)),
        # the departure is stamped before the write: no TTFT may be negative, and the write's own
        # time is the bias that remains in every TTFT
        "TTFT min ms": ms(min(ttfts, default=None)),
        "negative TTFTs": sum(t < 0 for t in ttfts),
        "write p50/p99 µs": "-"
        if not writes
        else f"{percentile(writes, 50) * 1e6:.0f}/{percentile(writes, 99) * 1e6:.0f}",
        "departure to server p50 ms": ms(percentile(send_gap, 50)),
        "read lag p99 ms": ms(level["client_read_lag_s"]["p99"]),
        "read a gap late": "-" if level["client_late_share"] is None else f"{level['client_late_share']:.2%}",
        "client is the limit": "yes" if limited else "no",
        # the record's words when it is: which signs, and the read lag p99 it gives as the error bound
        "limit note": client_limit_note(
            result.client_cpu,
            level_stats(result.samples, streams, result.wall_s, Objectives(2.0, 0.1)),
            streams,
            percentile(first_read_lags(result.samples), 99),
        )
        + f" (the truth: TTFT error p99 {ms(percentile(ttft_err, 99))} ms, ITL error p99 "
        f"{ms(percentile(itl_err, 99))} ms)"
        if limited
        else "",
        # the verdict (from what the client alone sees) against the truth: the client's error is
        # real when its first-token or gap error reaches 1 ms at the p99
        "verdict agrees": "yes" if limited == _client_error(ttft_err, itl_err) else "NO",
    }


def _client_error(ttft_err: list[float], itl_err: list[float]) -> bool:
    worst = [abs(v) for v in (percentile(ttft_err, 99), percentile(itl_err, 99)) if v is not None]
    return bool(worst) and max(worst) >= 0.001


def ruler_variant(name: str, changes: dict[str, str]) -> Path:
    """The practice kit's ruler profile with some settings changed, written under runs/ as NAME."""
    text = (ROOT / "harness/practice/profiles/ruler.yaml").read_text().replace("name: ruler", f"name: {name}")
    for old, new in changes.items():
        text = text.replace(old, new)
    path = ROOT / "runs" / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--streams", default="1,16,64,256,512,1024", help="rows with users spread over 1 s")
    parser.add_argument("--burst", default="16,64,256", help="rows with every user starting at once")
    parser.add_argument("--no-ceiling", action="store_true", help="skip the zero-delay ceiling row")
    parser.add_argument(
        "--processes",
        type=int,
        default=0,
        help="also run each row with the client spread over this many Locust worker processes",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a row's client-limit verdict disagrees with the measured error (quiet cores)",
    )
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    open_files = raise_open_files()
    cores = sorted(os.sched_getaffinity(0))
    server_core, client_core = cores[0], cores[-1]
    psutil.Process().cpu_affinity([client_core])
    rows = []
    # The ruler without spinning to its deadlines: the errors are measured against the server's
    # actual write times, so its schedule need not be exact, and a server core kept busy spinning
    # starves the kernel's own work there (loopback delivery runs in that core's softirq): packets
    # then reach this machine's socket late, and the client would be blamed for the kernel's delay.
    ruler = ruler_variant("bench-ruler", {"  itl_s: 0.01": "  itl_s: 0.01\n  spin_s: 0"})
    proc, root = start_server(str(ruler), server_core, [])
    try:
        for n in (int(x) for x in args.streams.split(",") if x):
            rows.append(run_case(root, n, args.seconds, server_pid=proc.pid))
            print(
                f"  {n} streams: {rows[-1]['tokens/s']} tok/s, client CPU {rows[-1]['client CPU']} "
                f"({rows[-1]['client µs/token']} µs/token), load average {os.getloadavg()[0]:.2f}",
                file=sys.stderr,
            )
        for n in (int(x) for x in args.burst.split(",") if x):
            rows.append(
                {
                    "streams": f"{n} burst",
                    **{
                        k: v
                        for k, v in run_case(root, n, args.seconds, burst=True, server_pid=proc.pid).items()
                        if k != "streams"
                    },
                }
            )
            print(
                f"  {n} streams at once: {rows[-1]['tokens/s']} tok/s, client CPU {rows[-1]['client CPU']}",
                file=sys.stderr,
            )
        if args.processes:
            dist = distributed.DistributedLoad(
                root, args.processes, ["--max-tokens", "128", "--prompt-set", "mixed"]
            )
            try:
                for n in (int(x) for x in args.streams.split(",")):
                    rows.append(
                        {
                            "streams": f"{n} ({args.processes} processes)",
                            **{
                                k: v
                                for k, v in run_case(root, n, args.seconds, dist, server_pid=proc.pid).items()
                                if k != "streams"
                            },
                        }
                    )
            finally:
                dist.close()
    finally:
        proc.terminate()
    notes = {r["streams"]: r.pop("limit note") for r in rows}
    print(tabulate(rows, headers="keys", tablefmt="github"))
    for streams, note in notes.items():
        if note:
            print(f"client-limit verdict at {streams}: {note}")
    disagree = [str(r["streams"]) for r in rows if r["verdict agrees"] != "yes"]
    if disagree:
        print(_disagreement(disagree, load_before, args.strict))
    if args.no_ceiling:
        return 1 if disagree and args.strict else 0
    # Zero-delay ceiling: tokens as fast as the server writes them; whichever side is busier is the limit.
    profile = ruler_variant("bench-zero", {"ttft_s: 0.05": "ttft_s: 0.0", "itl_s: 0.01": "itl_s: 0.0"})
    proc, root = start_server(str(profile), server_core, [])
    try:
        sp = psutil.Process(proc.pid)
        c0 = sp.cpu_times()
        t0 = time.monotonic()
        row = run_case(root, 16, args.seconds)
        c1, el = sp.cpu_times(), time.monotonic() - t0
        server_cpu = (c1.user + c1.system - c0.user - c0.system) / el
    finally:
        proc.terminate()
    print(
        f"\nzero-delay ceiling, 16 streams: {row['tokens/s']} tokens/s with client CPU {row['client CPU']} "
        f"and server CPU {server_cpu:.0%} (the busier side is the limit); a server that answers at once: "
        f"TTFT min {row['TTFT min ms']} ms, {row['negative TTFTs']} negative of {row['ok']}, "
        f"the request's write {row['write p50/p99 µs']} µs (p50/p99)"
    )
    print(
        f"server on core {server_core}, client on core {client_core}; {args.seconds:g} s closed loop per "
        f"row; open files allowed {open_files}; load average {load_before:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after; "
        "'client µs/token' = this process's CPU over the tokens it read (µs per token); 'server CPU' and "
        "'server late p99' = the server's own CPU and its writes' lateness against its schedule (a late "
        "server offers fewer tokens, but every error is against its actual write times); "
        "TTFT error = client's first-token time - server's write time; ITL error = client gap - server gap "
        "(same monotonic clock); 'TTFT - server's' = the reported TTFT minus the server's own (its first "
        "write - its read of the request); 'send delay' = the client's own time before the request left; "
        "'departure to server' = the request's departure to the server's read of it; 'TTFT min' and "
        "'negative TTFTs' = the lowest reported TTFT and how many were below zero (the departure is "
        "stamped just before the request's write, so none may be); 'write' = that write's own time, "
        "the bias left in every TTFT; "
        "'read lag' = kernel arrival stamp to the client's read, per token; 'read a gap late' = share of "
        "tokens read after the next had come; 'client is the limit' = the sweep's own verdict "
        "(client_limited); 'verdict agrees' = that verdict against the truth (a TTFT or gap error of 1 ms "
        "or more at the p99 is the client's); 'burst' rows start every user at once, as harness sweep does"
    )
    negative = sum(r["negative TTFTs"] for r in rows) + row["negative TTFTs"]
    if negative:
        print(f"\n{negative} negative TTFT(s): the departure stamp followed a first token")
    return 1 if negative or (disagree and args.strict) else 0


def _disagreement(rows: list[str], load_before: float, strict: bool) -> str:
    """The disagreement, said honestly: where, under what load, and whether it fails the run."""
    cores = len(os.sched_getaffinity(0))
    after = os.getloadavg()[0]
    load = f"load average {load_before:.1f} before the run and {after:.1f} after, on {cores} cores"
    verdict = (
        "--strict: this fails the run"
        if strict
        else "reported, not failed: on a shared machine the verdict is load-sensitive (rerun on quiet "
        "cores with --strict to hold it to the truth)"
    )
    where = ", ".join(rows)
    return f"\nthe client-limit verdict disagreed with the measured error at: {where} ({load}); {verdict}"


if __name__ == "__main__":
    sys.exit(main())
