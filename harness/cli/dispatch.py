"""The ``harness`` command: parse, dispatch, and turn a HarnessError into one line and an exit code."""

from __future__ import annotations

import argparse
import os
import sys

from harness import __version__, options, signals
from harness.cli import (
    capacity,
    check,
    cleanup,
    compare,
    crosscheck,
    demo,
    engines,
    export,
    gate,
    imitate,
    measure,
    practice,
    predict,
    preflight,
    probe,
    setup,
    summarise,
    sweep,
    telemetry,
    track,
    verify_allocation,
    worker,
)
from harness.safe_text import keep_secret
from harness.errors import HarnessError
from harness.endpoints.http_client import check_base_url
from harness.machine import probe as machine_probe
from harness.options.shared import VERSION
from harness.options.parser import HarnessParser, parse, with_api_path

COMMANDS = (
    practice,
    check,
    demo,
    sweep,
    worker,
    capacity,
    summarise,
    gate,
    export,
    compare,
    predict,
    verify_allocation,
    probe,
    measure,
    engines,
    preflight,
    track,
    cleanup,
    crosscheck,
    imitate,
    telemetry,
    setup,
)


def build_parser() -> argparse.ArgumentParser:
    parser = HarnessParser(prog="harness", description="Benchmark an LLM server as a service.")
    options.to_argparse(parser, VERSION, command="harness")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.add_parser(sub)
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


def _reader_gone() -> int:
    """The reader of our output left (``harness summarise ... | head``): end quietly, as a command
    killed by SIGPIPE would, without a traceback when Python flushes stdout at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parse(parser, argv)
    given = getattr(args, "base_url", None)
    if isinstance(given, str) and with_api_path(given) != given:  # the same URL form for every command
        args.base_url = with_api_path(given)
        print(f"    --base-url {given} has no path: using {args.base_url}", flush=True)
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
        options.check_parsed(parser, args)  # every declared option in its range, one line
        machine_probe.configure(getattr(args, "engine_log", None), getattr(args, "record_host_name", False))
        if isinstance(getattr(args, "api_key", None), str) and args.api_key:
            keep_secret(args.api_key)
            print(
                f"harness {args.command}: warning: --api-key puts the key on the command line, where "
                "`ps` shows it to every user of this machine; export it and pass --api-key-env NAME",
                file=sys.stderr,
            )
        for name in ("base_url", "metrics_url"):
            if isinstance(getattr(args, name, None), str) and getattr(args, name) not in ("", "none"):
                check_base_url(getattr(args, name), "--" + name.replace("_", "-"))
        return int(args.func(args) or 0)
    except BrokenPipeError:
        return _reader_gone()
    except HarnessError as exc:
        print(f"harness {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"harness {args.command}: interrupted", file=sys.stderr)
        return 130
