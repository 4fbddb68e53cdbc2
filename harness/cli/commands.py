"""The ``harness`` subcommands by name, in the order ``harness --help`` lists them. Each one is the
module of that name under ``harness.cli`` (a dash for an underscore), which declares its options
(``add_parser``) and runs it (``run``). A command line that names a command imports that module
alone: each start pays for one command's imports, not all of them (``harness.cli.dispatch``)."""

from __future__ import annotations

import importlib
from types import ModuleType

NAMES = (
    "practice",
    "check",
    "demo",
    "sweep",
    "worker",
    "capacity",
    "summarise",
    "gate",
    "export",
    "compare",
    "predict",
    "verify-allocation",
    "probe",
    "measure",
    "engines",
    "preflight",
    "track",
    "cleanup",
    "crosscheck",
    "imitate",
    "telemetry",
    "setup",
)


def load(name: str, package: str = "harness.cli") -> ModuleType:
    """The module that declares and runs the command ``name``."""
    return importlib.import_module(f"{package}.{name.replace('-', '_')}")


def named(argv: list[str], known: tuple[str, ...]) -> str | None:
    """The command a command line names (its first word that is not an option), when it is one of
    ``known``; None otherwise (no command, or a word argparse will refuse with the whole list)."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return first if first in known else None
