"""The one range check of every declared option: on a parsed value (the ``harness`` commands,
ConfigError), as Locust parses a text (argparse's one line) and on the web UI's form (the same
words). The words are ``harness.bounds``': ``--max-tokens takes a whole number from 2 to
1000000, got 1``."""

from __future__ import annotations

import argparse
import importlib
from typing import TYPE_CHECKING, Any, Callable

from harness import bounds
from harness.errors import ConfigError

if TYPE_CHECKING:
    from harness.options import Option


def check(option: Option, value: Any) -> Any:
    """``value`` when it fits ``option`` (None always does: the option was not given), else
    ConfigError with one line saying what the option takes."""
    if value is None or not option.numeric or option.low is None or option.high is None:
        return value
    if option.each is not None:
        text = str(value)
        if option.whole:
            return bounds.whole_list(option.flag, text, int(option.low), int(option.high))
        return bounds.number_list(option.flag, text, option.low, option.high)
    if option.positive and isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
        raise ConfigError(f"{option.flag} takes a positive number of seconds, got {value!r}")
    return bounds.number(option.flag, value, option.low, option.high, whole=option.whole)


def _reader(option: Option) -> Callable[[str, str], Any]:
    module, _, name = (option.reader or "").partition(":")
    reader: Callable[[str, str], Any] = getattr(importlib.import_module(module), name)
    return reader


def read(option: Option, text: str) -> Any:
    """``text`` as the option's value, checked (ConfigError otherwise): a number in range, one of
    the choices, or a text its reader reads."""
    if option.choices and text not in option.choices:
        raise ConfigError(f"{option.flag} takes one of {', '.join(option.choices)}, got {text!r}")
    if option.reader and text:
        _reader(option)(option.flag, text)
        return text
    if not option.numeric or option.each is not None:
        check(option, text)
        return text
    try:
        value: Any = int(text) if option.whole else float(text)
    except (TypeError, ValueError):
        value = text  # not a number: check() says what the option takes
    return check(option, value)


def problem(option: Option, text: str) -> str | None:
    """What is wrong with ``text`` for ``option``, as one line, or None."""
    try:
        read(option, text)
    except ConfigError as exc:
        return str(exc)
    return None


def option_type(option: Option) -> Callable[[str], Any]:
    """An argparse ``type`` for ``option``: its value, or argparse's one line
    ``argument --timeout: takes a number from 0.001 to 604800, got 0``."""

    def parse(text: str) -> Any:
        try:
            return read(option, text)
        except ConfigError as exc:
            words = str(exc).removeprefix(option.flag + " ").removeprefix(option.flag + ": ")
            raise argparse.ArgumentTypeError(words) from None

    parse.__name__ = option.flag  # argparse's own messages name the type by it
    parse.option = option  # type: ignore[attr-defined]
    return parse
