"""The ``harness`` parser's plumbing: help that shows each option's default, a missing or
misspelt option answered with the nearest real one, and the base URL's default path. The command
modules (``harness.cli``) build their parsers from it; only argparse's own usage errors print."""

from __future__ import annotations

import argparse
import copy
import difflib
import sys
from typing import Any, NoReturn
from urllib.parse import urlsplit


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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)
        self._words: list[str] = []

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._words = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        # a required option reported missing may be one the user typed wrong: say which
        if "required" in message and not message.startswith("unrecognized"):
            hints = suggestions(self, self._words)
            if hints:
                message = f"{message} ({'; '.join(hints)})"
        super().error(message)


def suggestions(parser: argparse.ArgumentParser, words: list[str]) -> list[str]:
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
    hints = suggestions(parser, unknown)
    return f"unrecognized arguments: {' '.join(unknown)}" + (f" ({'; '.join(hints)})" if hints else "")


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line; options a subcommand does not know get that subcommand's usage and
    a suggestion (argparse alone answers with the top-level usage and no hint)."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        command = (getattr(args, "_subparsers", None) or {}).get(getattr(args, "command", None))
        (command or parser).error(unknown_options(command or parser, unknown))
    return args


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
