"""The ``harness`` command: parse, dispatch, and turn a HarnessError into one line and an exit code."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from harness import __version__
from harness.cli import (
    check,
    cleanup,
    crosscheck,
    demo,
    engines,
    llama_cpu,
    measure,
    models,
    practice,
    predict,
    preflight,
    probe,
    summarise,
    sweep,
    track,
    verify_allocation,
    vllm_cpu,
)
from harness.errors import HarnessError

COMMANDS = (
    practice,
    check,
    demo,
    llama_cpu,
    sweep,
    summarise,
    predict,
    verify_allocation,
    probe,
    measure,
    engines,
    preflight,
    track,
    cleanup,
    models,
    crosscheck,
    vllm_cpu,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness", description="Benchmark an LLM server as a service.")
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.add_parser(sub)
    return parser


def _terminated(signum, frame) -> None:
    raise KeyboardInterrupt


def stop_on_sigterm() -> None:
    """Treat SIGTERM (a CI timeout, ``kill``, a service manager) as Ctrl-C, so every command's
    interrupt path runs: finished levels kept, the engine it started stopped, its port proven
    free. Without this a terminated ``track`` or ``llama-cpu serve`` would leave its server
    running. Only where SIGTERM still has its default action and only on the main thread."""
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    ):
        signal.signal(signal.SIGTERM, _terminated)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if argv is None:  # the real command line, not a call from Python (a test, another tool)
        stop_on_sigterm()
    try:
        return int(args.func(args) or 0)
    except HarnessError as exc:
        print(f"harness {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"harness {args.command}: interrupted", file=sys.stderr)
        return 130
