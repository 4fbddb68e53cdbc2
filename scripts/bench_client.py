#!/usr/bin/env python3
"""How precisely the load generator measures (a benchmark, not a test): prints a table.

The practice server's ``ruler`` profile (first token 50 ms after a request arrives, then one
token every 10 ms, 128 tokens, one SSE event per write) runs pinned to the first core; this
process, the Locust client as ``harness sweep`` drives it, runs pinned to the others (one on a
2-core machine; its Locust worker processes, where asked for, share them). For each number of
concurrent streams the client runs a closed loop for a fixed time; then every request's
measured token times are compared with the times the server wrote those tokens (its ground
truth, on the same monotonic clock). Error = client time - server write time.

    .venv/bin/python scripts/bench_client.py [--seconds 8] [--streams 1,16,64,256,512,1024] [--strict]
    .venv/bin/python scripts/bench_client.py --streams "" --burst "" --no-ceiling --workers 1,2
        (make bench-workers: the same rows from this process and from 1 and 2 Locust worker
        processes, and the streams each held within 1 ms)

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
from harness.measure.levels import (  # noqa: E402
    aggregate,
    client_limit_note,
    client_limited,
    first_read_lags,
    level_stats,
)
from harness.records.base import Objectives  # noqa: E402
from harness.measure.stats import percentile  # noqa: E402
from harness.engines.ports import free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def start_server(profile: str, core: int, extra: list[str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
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
    # with Locust workers, the client is this process (the master) and every worker process
    clients = [psutil.Process(), *(psutil.Process(p.pid) for p in distributed.procs)] if distributed else []
    c0, m0 = _cpu_s(clients), _cpu_s(clients[:1])
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
    # the client's CPU seconds over the level: the master's and the workers' together, or the
    # in-process level's own figure (its share times its wall)
    client_s = _cpu_s(clients) - c0 if clients else result.client_cpu * result.wall_s
    client_share = client_s / (time.monotonic() - t0) if clients else result.client_cpu
    master_share = (_cpu_s(clients[:1]) - m0) / (time.monotonic() - t0) if clients else None
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
        "client CPU": f"{client_share:.0%}",
        "client µs/token": round(client_s / tokens * 1e6, 1) if tokens else None,
        "master CPU": "-" if master_share is None else f"{master_share:.0%}",
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


def by_workers(root: str, args, server_pid: int, rows: list[dict]) -> list[dict]:
    """The --worker-streams rows from this process (every user at once, as a sweep level starts
    them) and again for each count of --workers Locust worker processes (a master here, every
    exact sample sent to it); each row appended to ``rows``; returns the summary: per client, the
    most streams held within 1 ms and where it was first lost."""
    ladder = sorted({int(x) for x in args.worker_streams.split(",") if x.strip()})
    summary = []
    for workers in [0, *(int(x) for x in args.workers.split(",") if x.strip())]:
        label = "this process" if workers == 0 else f"{workers} worker{'s' * (workers > 1)}"
        dist = None
        if workers:
            dist = distributed.DistributedLoad(
                root, workers, ["--max-tokens", "128", "--prompt-set", "mixed"]
            )
        mine = []
        try:
            for n in ladder:
                case = run_case(root, n, args.seconds, dist, burst=not workers, server_pid=server_pid)
                mine.append({**case, "streams": f"{n} ({label})"})
                print(f"  {n} streams, {label}: {_errors(case)}", file=sys.stderr)
        finally:
            if dist is not None:
                dist.close()
        rows.extend(mine)
        summary.append(held_row(label, ladder, mine))
    return summary


def _errors(case: dict) -> str:
    return f"TTFT error p99 {case['TTFT err p99 ms']} ms, ITL error p99 {case['ITL err p99 ms']} ms"


def held_row(label: str, ladder: list[int], cases: list[dict]) -> dict:
    """One client's line of the summary: the most streams with every row up to it within 1 ms."""
    held, lost = None, None
    for n, case in zip(ladder, cases, strict=True):
        within = all(
            case[k] is not None and abs(case[k]) < 1.0 for k in ("TTFT err p99 ms", "ITL err p99 ms")
        )
        if not within:
            lost = (n, case)
            break
        held = (n, case)
    return {
        "client": label,
        "streams held within 1 ms": held[0] if held else f"none of {ladder[0]}+",
        "tokens/s there": held[1]["tokens/s"] if held else None,
        "client CPU there": held[1]["client CPU"] if held else None,
        "first past 1 ms": f"{lost[0]}: {_errors(lost[1])}" if lost else f"none up to {ladder[-1]}",
    }


def _cores_text(cores: list[int]) -> str:
    """1, or 1-15 for a run of cores, or 1,3,5."""
    if len(cores) > 1 and cores == list(range(cores[0], cores[-1] + 1)):
        return f"{cores[0]}-{cores[-1]}"
    return ",".join(str(c) for c in cores)


def _cpu_s(procs: list[psutil.Process]) -> float:
    """CPU seconds (user and system) of these processes so far."""
    return sum(t.user + t.system for t in (p.cpu_times() for p in procs))


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
        "--workers",
        default="",
        help="comma-separated counts of Locust worker processes (e.g. 1,2): the --worker-streams rows "
        "again for each, beside the same rows from this process, and the streams each held within 1 ms",
    )
    parser.add_argument("--worker-streams", default="64,128,256,512", help="the rows of --workers")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a row's client-limit verdict disagrees with the measured error (quiet cores)",
    )
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    open_files = raise_open_files()
    cores = sorted(os.sched_getaffinity(0))
    # the server on the first core, the client on every other (its Locust workers too, which inherit it)
    server_core, client_cores = cores[0], cores[1:] or cores
    psutil.Process().cpu_affinity(client_cores)
    client_core = _cores_text(client_cores)
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
        held = by_workers(root, args, proc.pid, rows) if args.workers else []
    finally:
        proc.terminate()
    notes = {r["streams"]: r.pop("limit note") for r in rows}
    print(tabulate(rows, headers="keys", tablefmt="github"))
    for streams, note in notes.items():
        if note:
            print(f"client-limit verdict at {streams}: {note}")
    if held:
        print("\nstreams held within 1 ms (TTFT and ITL error p99 under 1 ms in every row up to it):")
        print(tabulate(held, headers="keys", tablefmt="github"))
        print(
            f"every client here runs on core(s) {client_core} (the server on core {server_core}): "
            f"{len(client_cores)} core(s) for the master (this process) and its worker processes together"
        )
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
        f"server on core {server_core}, client on core(s) {client_core}; {args.seconds:g} s closed loop per "
        f"row; open files allowed {open_files}; load average {load_before:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after; "
        "'client CPU' and 'client µs/token' = this process's CPU (with its Locust worker processes' in "
        "the workers' rows) as a share of the row's time and over the tokens it read; 'master CPU' = this "
        "process's own share in the workers' rows (the Locust master, taking every sample); 'server CPU' and "
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
    cores = os.cpu_count()
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
