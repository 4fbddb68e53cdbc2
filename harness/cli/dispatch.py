"""The ``harness`` command: parse, dispatch, and turn a HarnessError into one line and an exit code."""

from __future__ import annotations

import argparse
import copy
import difflib
import os
import sys
from urllib.parse import urlsplit

from harness import __version__, options, signals
from harness.cli import (
    capacity,
    check,
    cleanup,
    crosscheck,
    demo,
    engines,
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
from harness.core.server_text import keep_secret
from harness.errors import HarnessError
from harness.io.http import check_base_url

COMMANDS = (
    practice,
    check,
    demo,
    sweep,
    worker,
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
    crosscheck,
    imitate,
    telemetry,
    setup,
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
        self._words: list[str] = []

    def parse_known_args(self, args=None, namespace=None):
        self._words = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        # a required option reported missing may be one the user typed wrong: say which
        if "required" in message and not message.startswith("unrecognized"):
            hints = _suggestions(self, self._words)
            if hints:
                message = f"{message} ({'; '.join(hints)})"
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    parser = HarnessParser(prog="harness", description="Benchmark an LLM server as a service.")
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.add_parser(sub)
    setup.add_aliases(sub)  # the old spellings: harness llama-cpu ... (a notice, then the same run)
    parser.set_defaults(_subparsers=sub.choices)
    return parser


def _suggestions(parser: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """``did you mean --concurrency?`` for each word that looks like an option the parser lacks."""
    flags = [f for action in parser._actions for f in action.option_strings if f.startswith("--")]
    hints = []
    for word in words:
        name = word.split("=", 1)[0]
        if name.startswith("--") and not any(f.startswith(name) for f in flags):
            near = difflib.get_close_matches(name, flags, n=1, cutoff=0.6)
            hints.append(
                f"{name} is no option of {parser.prog}" + (f"; did you mean {near[0]}?" if near else "")
            )
    return hints


def unknown_options(parser: argparse.ArgumentParser, unknown: list[str]) -> str:
    """One line for options a subcommand does not have, with the nearest option of each:
    ``unrecognized arguments: --concurency 1,2 (--concurency ...; did you mean --concurrency?)``."""
    hints = _suggestions(parser, unknown)
    return f"unrecognized arguments: {' '.join(unknown)}" + (f" ({'; '.join(hints)})" if hints else "")


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line; options a subcommand does not know get that subcommand's usage and
    a suggestion (argparse alone answers with the top-level usage and no hint)."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        command = (getattr(args, "_subparsers", None) or {}).get(getattr(args, "command", None))
        (command or parser).error(unknown_options(command or parser, unknown))
    return args


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


def with_api_path(base_url: str) -> str:
    """An OpenAI base URL given without a path (``http://h:8000``) means ``http://h:8000/v1``, as
    every engine here serves it; one with a path is kept as given."""
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return base_url  # the command says what is wrong with it, in its own words
    if parts.scheme in ("http", "https") and parts.netloc and not parts.path.strip("/"):
        return parts._replace(path="/v1").geturl()
    return base_url


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parse(parser, argv)
    given = getattr(args, "base_url", None)
    if isinstance(given, str) and with_api_path(given) != given:  # the same URL form for every command
        args.base_url = with_api_path(given)
        print(f"    --base-url {given} has no path: using {args.base_url}", flush=True)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    setup.notice(args)
    if argv is None:  # the real command line, not a call from Python (a test, another tool)
        stop_on_sigterm()
    try:
        options.check_parsed(parser, args)  # every declared option in its range, one line
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
