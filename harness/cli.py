"""The ``harness`` command: parse, dispatch, and turn a HarnessError into one line and an exit code."""

from __future__ import annotations

import argparse
import sys

from harness import __version__
from harness.commands import (check, cleanup, crosscheck, demo, engines, llama_cpu, measure, models, practice, predict, preflight, probe,
                              summarise, sweep, track, verify_allocation)
from harness.errors import HarnessError

COMMANDS = (practice, check, demo, llama_cpu, sweep, summarise, predict, verify_allocation, probe, measure, engines,
            preflight, track, cleanup, models, crosscheck)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness", description="Benchmark an LLM server as a service.")
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except HarnessError as exc:
        print(f"harness {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"harness {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
