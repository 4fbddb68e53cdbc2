"""``harness demo`` (``make practice-demo``): the one-minute look, no GPU needed.

Starts the kit practice server (8 seats) on a free port and runs the harness's own sweep against
it: crowds of 1, 2, 4, 8 and 16 people, each person sending a request, waiting for the whole
answer and sending the next, at least ``--requests`` requests per crowd size (24 by default, so
the p95 first-token wait is the 23rd of 24 or better, not the worse of two). Every crowd size is
one level record in the notebook it keeps (``runs/demo/labbook.md``), so ``harness summarise``
reads it again later. Prints the curve with TTFT and TPOT, the capacity within the promise and
the copies a peak crowd needs, draws the crowd chart, and stops the server.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.core import bounds, curves
from harness.errors import HarnessError
from harness.io.ports import free_port
from harness.report import curve_tables as tables
from harness.report.markdown import table
from harness.run.child import harness_argv
from harness.run.launchers.host import HostLauncher
from harness import options
from harness.options.load import MAX_TOKENS, REQUESTS
from harness.options.sizing import PEAK, PROMISE

LABEL = "practice-demo"


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="practice server + crowd-size sweep, printed as a table (no GPU needed)")
    p.add_argument("--crowds", default="1,2,4,8,16", help="crowd sizes (comma-separated)")
    options.to_argparse(p, REQUESTS, command="demo")
    p.add_argument("--rounds", type=int, default=2, help="requests each person sends per crowd size at least")
    options.to_argparse(p, MAX_TOKENS, command="demo")
    options.to_argparse(p, PROMISE, command="demo")
    options.to_argparse(p, PEAK, command="demo")
    p.add_argument("--log-dir", default="runs/demo", help="where the notebook, chart and server log go")
    p.set_defaults(func=run)


def run(args) -> int:
    bounds.sizing(args.promise, args.peak, 0.2)  # before the server starts, not after the sweep
    log_dir = Path(args.log_dir)
    notebook = log_dir / "labbook.md"
    port = free_port()
    launcher = _practice_launcher(port, log_dir)
    launcher.start(timeout=30)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        print(
            f"practice server (kit profile, 8 seats) on {base}; at least {args.requests} requests per crowd "
            f"size ({args.rounds} or more per person), up to {args.max_tokens} tokens out; "
            f"notebook {notebook}",
            flush=True,
        )
        code = subprocess.run(harness_argv(_sweep_args(args, base, notebook))).returncode
    finally:
        launcher.stop()
    if code != 0:
        raise HarnessError(f"the sweep against the practice server failed (exit {code}); read {log_dir}")
    _print_summary(args, notebook, log_dir)
    return 0


def _sweep_args(args, base: str, notebook: Path) -> list[str]:
    """The ``harness sweep`` the demo runs: the practice server's conditions stated for the record."""
    return [
        "sweep",
        "--base-url",
        base,
        "--model",
        "local-chat",
        "--concurrency",
        args.crowds,
        "--requests",
        str(args.requests),
        "--min-rounds",
        str(args.rounds),
        "--max-tokens",
        str(args.max_tokens),
        "--label",
        LABEL,
        "--engine",
        "practice",
        "--quant",
        "made-up (practice kit)",
        "--context-length",
        "4096",
        "--server-slots",
        "8",
        "--labbook",
        str(notebook),
    ]


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


def _print_summary(args, notebook: Path, log_dir: Path) -> None:
    """The demo's own curve from the notebook: conditions, the table, capacity and copies, chart."""
    from harness.io.notebook import read_records
    from harness.core.records import is_level
    from harness.report.charts import crowd_chart

    levels = curves.by_label(read_records(notebook, "level", select=is_level).records).get(LABEL, {})
    crowds = {int(c) for c in args.crowds.split(",") if c.strip()}
    levels = {c: r for c, r in levels.items() if c in crowds}  # this run's crowds (latest record of each)
    d = curves.curve(levels)
    if not d.levels:
        print("\nNo crowd size finished a request; read the practice server's log in " + str(log_dir))
        return
    what, conditions = tables.conditions_lines(LABEL, levels, d)
    print(f"\n{what}\n{conditions}\n")
    print(table(tables.CURVE_HEAD, tables.curve_rows(d, levels)))
    found = curves.capacity_reading(levels, args.promise)
    capacity = found.capacity
    print(f"\n{tables.capacity_line(levels, args.promise)}")
    if capacity:
        need, spare = curves.copies_for(args.peak, capacity)
        bound = "" if found.reading == "exact" else " at most (the capacity is a lower bound)"
        print(
            f"a peak of {args.peak} people needs {need} copies of this server ({spare} with 20 % spares)"
            + bound
        )
    chart = crowd_chart({LABEL: levels}, log_dir / "crowd.png", args.promise)
    print(f"chart: {chart}\nnotebook: {notebook} (harness summarise --labbook {notebook} --label {LABEL})")
