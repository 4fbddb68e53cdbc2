"""What a parser holds of each option, as plain data, so that ``harness``'s parsers (built here) and
Locust's (built in a process of its own: importing Locust patches the standard library) are
compared with the declarations the same way. Run as a script it prints Locust's as JSON."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import pkgutil
import sys

import harness.options
from harness.options import Option


def declarations() -> dict[int, str]:
    """Every declared Option by id, named ``module.NAME`` (``load.TIMEOUT``)."""
    out: dict[int, str] = {}
    for info in pkgutil.iter_modules(harness.options.__path__):
        module = importlib.import_module(f"harness.options.{info.name}")
        source = inspect.getsource(module)
        for name, value in vars(module).items():
            if isinstance(value, Option) and f"\n{name} = Option(" in source:  # where it is written
                out[id(value)] = f"{info.name}.{name}"
    return out


def _type_name(action: argparse.Action) -> str | None:
    if isinstance(action, argparse._StoreTrueAction):
        return "flag"
    t = action.type
    if t is None:
        return None
    if getattr(t, "option", None) is not None:
        return "checked " + t.option.flag  # made by ranges.option_type for this declaration
    return getattr(t, "__name__", repr(t))


def describe(parser: argparse.ArgumentParser, command: str) -> list[dict]:
    """One row per option of ``parser`` with a ``--`` name (help and version left out)."""
    names = declarations()
    rows = []
    for a in parser._actions:
        flags = [f for f in a.option_strings if f.startswith("--")]
        if not flags or isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
            continue
        declared = getattr(a, "option", None)
        rows.append(
            {
                "command": command,
                "flags": a.option_strings,
                "dest": a.dest,
                "default": repr(a.default),
                "required": a.required,
                "help": a.help,
                "choices": list(a.choices) if a.choices else None,
                "type": _type_name(a),
                "env_var": getattr(a, "env_var", None),
                "web": getattr(a, "include_in_web_ui", None),
                "declared": names.get(id(declared)) if declared is not None else None,
            }
        )
    return rows


def harness_parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every parser of ``harness``: each subcommand's, and each of their own subcommands'."""
    from harness.cli.dispatch import build_parser

    out = []

    def walk(parser: argparse.ArgumentParser, command: str) -> None:
        out.append((command, parser))
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, f"{command} {name}".strip())

    walk(build_parser(), "")
    return out[1:]  # the top parser has --version only


def locust_rows() -> list[dict]:
    """Locust's parser with the harness's options on it (run in this process: imports Locust)."""
    import harness.load.locust_options  # noqa: F401  (its listener adds the options)
    from locust.argument_parser import get_parser

    parser = get_parser()
    for a in parser._actions:  # Locust's own options keep their flags; ours carry a declaration
        a.include_in_web_ui = getattr(a, "include_in_web_ui", None)
    return describe(parser, "locust")


if __name__ == "__main__":
    json.dump(locust_rows(), sys.stdout)
