"""The ``harness`` command line: one thin module per subcommand (parse, call, render), each with
``add_parser(subparsers)`` and ``run(args) -> int``; ``commands`` lists them, and ``dispatch``
builds the parser and turns a HarnessError into one line and an exit code.

The names below are loaded on first use, not when the package is imported: ``python -m
harness.cli sweep`` imports this package before ``harness.cli.entry`` can monkey-patch for gevent,
and the subcommands' imports (``ssl`` through ``requests``) must come after that patch."""

from __future__ import annotations

__all__ = ["build_parser", "main", "stop_on_sigterm"]


def __getattr__(name: str):
    if name in __all__:
        from harness.cli import dispatch

        return getattr(dispatch, name)
    raise AttributeError(f"module 'harness.cli' has no attribute {name!r}")
