"""Every option set declared once, typed, with its bounds and help; the parsers are made from it.

    Option            one option: name, type, default, bounds, help, choices, aliases, web form
    OptionSet         a named group of options and the rules between them
    to_argparse       a ``harness`` subcommand's arguments (numbers checked later, by ``check``)
    to_locust         Locust's arguments (numbers checked as parsed, ``LOCUST_*`` variables too)
    retype            Locust's own options (``--users``) given a declared range
    check             every option on a parsed namespace in range, then each set's rules
    check_parsed      every declared option of the command that parsed a namespace, in range
    check_form        the web UI's start form: its first field out of range, as one line
    from_namespace    one set's values, typed and frozen, for a plan or a worker's command line
    to_argv           those values as a command line again (a Locust worker's)

The sets live beside this module (``load``, ``workload``, ``slo``, ``telemetry``, ``workers``,
``record``, ``sizing``, ``search``, ``shared``); a test compares every parser with them.
"""

from __future__ import annotations

import argparse
import builtins
import os
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

from harness.options import ranges

__all__ = [
    "Option",
    "OptionSet",
    "Values",
    "check",
    "check_form",
    "check_parsed",
    "from_namespace",
    "retype",
    "to_argparse",
    "to_argv",
    "to_locust",
]

NO_COMMANDS: frozenset[str] = frozenset()


@dataclass(frozen=True, eq=False)
class Option:
    """One option. ``name`` is the flag without its dashes (``timeout``: ``--timeout``, dest
    ``timeout``, Locust's variable ``LOCUST_TIMEOUT``). ``type`` is int, float, str or bool (a
    flag); ``each`` makes a str option a comma-separated list of such numbers. ``low``/``high``
    bound every number (``positive``: the low bound says "a positive number of seconds").
    ``defaults`` and ``required`` name the commands that differ from ``default``. ``reader`` is
    ``"module:function"`` called as ``function(flag, text)``: it reads a text option (a length
    spec, a telemetry word) and raises ConfigError for one that does not read."""

    name: str
    type: builtins.type = str
    default: Any = None
    help: str = ""
    low: float | None = None
    high: float | None = None
    positive: bool = False
    each: builtins.type | None = None
    choices: tuple[str, ...] | None = None
    aliases: tuple[str, ...] = ()
    web_form: bool = False
    defaults: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    required: frozenset[str] = NO_COMMANDS
    reader: str | None = None
    env_default: str | None = None  # an environment variable that, when set, gives the default
    metavar: str | None = None
    many: bool = False  # repeatable: each use adds one value to a list

    @property
    def flag(self) -> str:
        return "--" + self.name

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    @property
    def whole(self) -> bool:
        return (self.each or self.type) is int

    @property
    def numeric(self) -> bool:
        return (self.each or self.type) in (int, float)

    def default_in(self, command: str) -> Any:
        """The default this command gives it: its own, else the environment's (``env_default``),
        else the common one."""
        if command in self.defaults:
            value = self.defaults[command]
        elif self.env_default and os.environ.get(self.env_default):
            value = os.environ[self.env_default]
        else:
            value = self.default
        return list(value) if self.many and value is not None else value


@dataclass(frozen=True, eq=False)
class OptionSet:
    """A named group of options; ``rules`` check them together (ConfigError, one line)."""

    name: str
    options: tuple[Option, ...]
    rules: tuple[Callable[[Any], None], ...] = ()

    def __iter__(self):
        return iter(self.options)

    def get(self, name: str) -> Option:
        return next(o for o in self.options if o.name == name)

    def without(self, *names: str) -> OptionSet:
        """The same set less ``names`` (its rules kept: they read what is there)."""
        missing = set(names) - {o.name for o in self.options}
        if missing:
            raise KeyError(f"{self.name} has no {sorted(missing)}")
        return OptionSet(self.name, tuple(o for o in self.options if o.name not in names), self.rules)


Given = Option | OptionSet


def _options(given: tuple[Given, ...]) -> list[Option]:
    out: list[Option] = []
    for g in given:
        out.extend(g.options if isinstance(g, OptionSet) else (g,))
    return out


def to_argparse(parser: Any, *given: Given, command: str) -> list:
    """Each option on ``parser`` (a ``harness`` subcommand's) with its default for ``command``;
    numbers take their plain type here and are range-checked by ``check`` after parsing, so a
    bad one is the command's one ConfigError line. Each action carries its ``option``."""
    actions = []
    for o in _options(given):
        kw: dict[str, Any] = {"dest": o.dest, "help": o.help, "default": o.default_in(command)}
        if o.type is bool:
            kw["action"] = "store_true"
        else:
            kw["type"] = None if o.type is str else o.type
            if o.many:
                kw["action"] = "append"
            if o.choices:
                kw["choices"] = list(o.choices)
            if command in o.required:
                kw["required"] = True
                del kw["default"]
            if o.metavar:
                kw["metavar"] = o.metavar
        action = parser.add_argument(o.flag, *o.aliases, **kw)
        action.option = o
        actions.append(action)
    return actions


def to_locust(parser: Any, *given: Given) -> list:
    """Each option on Locust's parser: its ``LOCUST_*`` variable, its place on the web UI's form,
    and a type that checks its range (or reads it) as it is parsed, so a bad value is argparse's
    one line before any process forks or user starts."""
    actions = []
    for o in _options(given):
        kw: dict[str, Any] = {
            "dest": o.dest,
            "help": o.help,
            "default": o.default_in("locust"),
            "env_var": "LOCUST_" + o.dest.upper(),
            "include_in_web_ui": o.web_form,
        }
        if o.type is bool:
            kw["action"] = "store_true"
        else:
            kw["type"] = ranges.option_type(o)
            if o.choices:
                kw["choices"] = list(o.choices)
        action = parser.add_argument(o.flag, *o.aliases, **kw)
        action.option = o
        actions.append(action)
    return actions


def retype(parser: Any, *given: Given) -> None:
    """Options another program already put on ``parser`` (Locust's ``--users``) made to check the
    range declared for them as they are parsed."""
    by_flag = {o.flag: o for o in _options(given)}
    for action in parser._actions:  # argparse has no public way to reach an added argument
        for flag in action.option_strings:
            if flag in by_flag:
                action.type = ranges.option_type(by_flag[flag])
                action.option = by_flag[flag]


def check(namespace: Any, *given: Given) -> None:
    """Every given option found on ``namespace`` in its range, then each set's rules (ConfigError,
    one line, for the first that does not fit)."""
    for o in _options(given):
        if hasattr(namespace, o.dest):
            ranges.check(o, getattr(namespace, o.dest))
    for g in given:
        for rule in g.rules if isinstance(g, OptionSet) else ():
            rule(namespace)


def check_parsed(parser: Any, namespace: Any) -> None:
    """Every declared option of the command that parsed ``namespace`` (its subcommand's, down the
    chosen path) in its range: ConfigError, one line, for the first that is not."""
    while parser is not None:
        chosen = None
        for action in parser._actions:
            option = getattr(action, "option", None)
            if option is not None and hasattr(namespace, action.dest):
                ranges.check(option, getattr(namespace, action.dest))
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(str(getattr(namespace, action.dest, "")))
        parser = chosen


def check_form(form: Mapping[str, str], *given: Given, fields: Mapping[str, str] | None = None) -> str | None:
    """The web UI start form's first field that does not read as its option, as one line, or None.
    ``fields`` names form fields that are not an option's dest (Locust's ``user_count``)."""
    names = {o.dest: o for o in _options(given) if o.web_form}
    for field_name, flag in (fields or {}).items():
        names[field_name] = next(o for o in _options(given) if o.flag == flag)
    for name, o in names.items():
        text = form.get(name)
        if text is None or (text == "" and (not o.numeric or name in (fields or {}))):
            continue  # an empty text field means none; Locust's user count its own default
        problem = ranges.problem(o, text)
        if problem:
            return problem
    return None


class Values(Mapping[str, Any]):
    """One set's values read from a namespace: a frozen mapping by dest, attributes too."""

    def __init__(self, options: OptionSet, items: dict[str, Any]) -> None:
        self._set = options
        self._items = MappingProxyType(dict(items))

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __getattr__(self, key: str) -> Any:
        try:
            return self._items[key]
        except KeyError:
            raise AttributeError(key) from None

    @property
    def options(self) -> OptionSet:
        return self._set


def from_namespace(namespace: Any, options: OptionSet) -> Values:
    """The set's options as parsed (those the parser has), checked, as a frozen ``Values``."""
    check(namespace, options)
    return Values(
        options, {o.dest: getattr(namespace, o.dest) for o in options if hasattr(namespace, o.dest)}
    )


def to_argv(values: Mapping[str, Any], options: Given | None = None) -> list[str]:
    """A command line that gives ``values`` (by dest) again: ``--flag VALUE`` for each set value,
    a flag alone for a true bool, nothing for None; numbers as ``%g`` writes them."""
    declared = _options((options,)) if options is not None else list(values.options)  # type: ignore[attr-defined]
    out: list[str] = []
    for o in declared:
        if o.dest not in values:
            continue
        value = values[o.dest]
        if value is None or value is False:
            continue
        if value is True:
            out.append(o.flag)
        else:
            out += [o.flag, format(value, "g") if isinstance(value, float) else str(value)]
    return out
