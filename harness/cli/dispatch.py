"""The ``harness`` command: parse, dispatch, and turn a HarnessError into one line and an exit code."""

from __future__ import annotations

import argparse
import copy
import os
import signal
import sys
import threading

from harness import __version__
from harness.cli import (
    capacity,
    check,
    cleanup,
    crosscheck,
    demo,
    engines,
    gate,
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
    capacity,
    summarise,
    gate,
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


def _shows_default(action: argparse.Action) -> bool:
    default = action.default
    return bool(action.option_strings) and not (
        default is None
        or default is False
        or default is argparse.SUPPRESS
        or default == ""
        or default == []
        or isinstance(action, (argparse._HelpAction, argparse._VersionAction))
    )


class DefaultsFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the help states it already or there is
    none to state (a flag, an option with no default, an empty list)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text.lower() or not _shows_default(action):
            return text
        return f"{text} (default: %(default)s)" if text.strip() else "default: %(default)s"

    def _format_action(self, action: argparse.Action) -> str:
        if not (action.help or "").strip() and _shows_default(action):
            action = copy.copy(action)  # an option without a help line still shows its default
            action.help = "default: %(default)s"
        return super()._format_action(action)


class HarnessParser(argparse.ArgumentParser):
    """The parser of ``harness`` and of every subcommand (``add_subparsers`` makes its parsers of
    the parser's own class): the defaults shown in every ``--help``."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = HarnessParser(prog="harness", description="Benchmark an LLM server as a service.")
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


def _reader_gone() -> int:
    """The reader of our output left (``harness summarise ... | head``): end quietly, as a command
    killed by SIGPIPE would, without a traceback when Python flushes stdout at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141


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
    except BrokenPipeError:
        return _reader_gone()
    except HarnessError as exc:
        print(f"harness {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"harness {args.command}: interrupted", file=sys.stderr)
        return 130
