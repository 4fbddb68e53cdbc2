"""``harness export``: the level records of run directories or notebooks in a format other tools
read: llm-d-benchmark's Benchmark Report (each checked against its vendored schema) or a CSV."""

from __future__ import annotations

import sys

from harness import options
from harness.export import files
from harness.options.export import FORMAT, OUT


def add_parser(sub) -> None:
    p = sub.add_parser(
        "export",
        help="write levels as llm-d-benchmark Benchmark Reports or one CSV",
        description="Write every level record of the run directories or notebooks named as "
        "llm-d-benchmark's Benchmark Report v0.2.1 (one JSON file per level, each validated against "
        "the schema first) or as one CSV row per level. Figures a level did not record are left out.",
    )
    p.add_argument("sources", nargs="+", metavar="RUN_OR_NOTEBOOK", help="a run directory or a notebook file")
    options.to_argparse(p, FORMAT, OUT, command="export")
    p.set_defaults(func=run)


def run(args) -> int:
    done = files.export(args.sources, args.format, args.out)
    for warning in done.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"==> export: {done.levels} level(s) as {args.format}, {len(done.files)} file(s) in {args.out}")
    for path in done.files[:5]:
        print(f"    {path}")
    if len(done.files) > 5:
        print(f"    ... and {len(done.files) - 5} more")
    return 0
