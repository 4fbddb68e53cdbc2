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

from pathlib import Path

from harness import options
from harness.options.load import MAX_TOKENS, REQUESTS
from harness.options.sizing import PEAK, PROMISE
from harness import bounds
from harness.run.demo_run import LABEL, run_demo


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
    from harness.report.demo_summary import summary_lines  # matplotlib: paid by this command alone

    bounds.sizing(args.promise, args.peak, 0.2)  # before the server starts, not after the sweep
    notebook = run_demo(args, lambda line: print(line, flush=True))
    for line in summary_lines(LABEL, args.crowds, args.promise, args.peak, notebook, Path(args.log_dir)):
        print(line)
    return 0
