#!/usr/bin/env python3
"""What one ``harness`` start costs before the command runs: CPU and wall time of ``harness CMD
--help`` in fresh interpreters, per command, for one checkout or two side by side (a benchmark).

The suite and the tracks start ``harness`` hundreds of times (a practice server, a sweep, a track's
every step), so its imports are paid on every start. Each figure is the median over ``--repeat``
starts; CPU is user plus system time of the child, which other work on the machine disturbs less
than the wall clock. Bytecode is compiled first in each checkout, as ``make test`` does.

    .venv/bin/python scripts/bench_cli_start.py [--repeat 7] [--tree OTHER_CHECKOUT]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("practice", "sweep", "summarise", "track", "measure", "setup")


def start(tree: Path, command: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one ``harness COMMAND --help`` in ``tree``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "harness.cli", command, "--help"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        stdout=subprocess.DEVNULL,
        check=True,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--tree", type=Path, help="a second checkout, timed beside this one")
    args = parser.parse_args()
    trees = [ROOT] + ([args.tree.resolve()] if args.tree else [])
    for tree in trees:
        subprocess.run([sys.executable, "-m", "compileall", "-q", "harness"], cwd=tree, check=True)
    rows = []
    for command in COMMANDS:
        row = [command]
        for tree in trees:
            runs = [start(tree, command) for _ in range(args.repeat)]
            row += [statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs)]
        rows.append(row)
    heads = ["harness CMD --help"]
    for tree in trees:
        heads += [f"CPU s ({tree.name})", f"wall s ({tree.name})"]
    print(tabulate(rows, heads, floatfmt=".3f"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
