"""The ``harness`` command: parse, dispatch, and turn a HarnessError into one line and an exit code."""

from __future__ import annotations

import argparse
import sys

from harness import __version__, options, signals
from harness.cli import commands, setup
from harness.errors import HarnessError
from harness.options import given
from harness.options.shared import VERSION
from harness.options.parser import HarnessParser, parse


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """Every command's parser; or, given a command line that names a command, that command's
    parser and the others by name alone, so that a start imports one command's modules (about
    0.4 s of CPU fewer a start: docs/measurements.md#cli-start)."""
    chosen = None if argv is None else commands.named(argv, commands.NAMES + setup.NAMES)
    if argv == ["--version"]:
        chosen = ""  # the version alone needs no command's parser: each is added by name
    parser = HarnessParser(prog="harness", description="Benchmark an LLM server as a service.")
    options.to_argparse(parser, VERSION, command="harness")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in commands.NAMES:
        if chosen in (None, name) or (name == "setup" and chosen in setup.NAMES):
            commands.load(name).add_parser(sub)
        else:
            sub.add_parser(name)
    if chosen is None or chosen in setup.NAMES:
        setup.add_aliases(sub)  # the old spellings: harness llama-cpu ... (a notice, then the same run)
    parser.set_defaults(_subparsers=sub.choices)
    return parser


def stop_on_sigterm() -> None:
    """Treat SIGTERM (a CI timeout, ``kill``, a service manager) as Ctrl-C, so every command's
    interrupt path runs: finished levels kept, the engine it started stopped, its port proven
    free. Without this a terminated ``track`` or ``llama-cpu serve`` would leave its server
    running. Only where SIGTERM still has its default action and only on the main thread
    (``harness.signals``, which the console script installs before any import)."""
    signals.install()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(sys.argv[1:] if argv is None else argv)
    args = parse(parser, argv)
    notice = given.with_base_path(args)
    if notice:
        print(notice, flush=True)
    if args.version:  # the top-level flag: nothing else runs
        print(f"harness {__version__}")
        return 0
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    setup.notice(args)
    if argv is None:  # the real command line, not a call from Python (a test, another tool)
        stop_on_sigterm()
    try:
        given.apply(parser, args, lambda line: print(line, file=sys.stderr))
        return int(args.func(args) or 0)
    except BrokenPipeError:
        return signals.reader_gone()
    except HarnessError as exc:
        print(f"harness {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"harness {args.command}: interrupted", file=sys.stderr)
        return 130
